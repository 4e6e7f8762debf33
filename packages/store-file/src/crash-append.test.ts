import { describe, expect, it } from 'vitest';
import type { RecordedEvent, StreamId } from '@sessionfold/core';
import { fileStore } from './index.js';
import { ChildOutput, ChildPool, eventsOf, freshDir, random, randomStream, startChild } from './test-support.fixture.js';

const KILLS = Number(process.env.SESSIONFOLD_CRASH_KILLS ?? 58);
/** Kills per store directory: recovery is exercised again and again, while journals stay small enough to re-check in full each time. */
const KILLS_PER_DIRECTORY = 10;

interface Ack {
  stream: StreamId;
  run: string;
  w: number;
  batch: number;
  size: number;
  revision: number;
}

interface Step {
  run: string;
  w: number;
  batch: number;
  i: number;
  size: number;
}

/** Checks one stream after a crash: gap-free revisions, whole batches, every acknowledged batch present. */
function checkStream(stream: StreamId, events: RecordedEvent[], acks: Ack[]): void {
  events.forEach((event, index) => expect(event.revision, `${stream}: revisions are gap-free`).toBe(index + 1));
  const batchesOf = new Map<string, number[]>();
  for (let k = 0; k < events.length; ) {
    const head = (events[k] as RecordedEvent).data as unknown as Step;
    expect(head.i, `${stream}@${k + 1}: a batch starts at its first event`).toBe(0);
    for (let i = 0; i < head.size; i++) {
      const step = events[k + i]?.data as unknown as Step | undefined;
      expect(step, `${stream}@${k + 1}: batch of ${head.size} is whole`).toMatchObject({ run: head.run, w: head.w, batch: head.batch, i });
    }
    const key = `${head.run}/${head.w}`;
    const list = batchesOf.get(key) ?? [];
    list.push(head.batch);
    batchesOf.set(key, list);
    k += head.size;
  }
  for (const [key, batches] of batchesOf) {
    expect(batches, `${key}: a worker's batches land in order, none missing`).toEqual(batches.map((_, i) => i));
  }
  for (const ack of acks) {
    const last = events[ack.revision - 1]?.data as unknown as Step | undefined;
    expect(last, `acknowledged ${ack.stream}@${ack.revision} survives`).toMatchObject({
      run: ack.run,
      w: ack.w,
      batch: ack.batch,
      i: ack.size - 1,
      size: ack.size,
    });
  }
}

function parseAcks(output: ChildOutput, run: string): Ack[] {
  return output.lines
    .filter((line) => line.startsWith('ack '))
    .map((line) => {
      const [, stream, w, batch, size, revision] = line.split(' ');
      return { stream: stream as StreamId, run, w: Number(w), batch: Number(batch), size: Number(size), revision: Number(revision) };
    });
}

describe('SIGKILL while appending', () => {
  it(`every acknowledged batch survives whole and revisions stay gap-free across ${KILLS} kills`, async () => {
    const seed = Number(process.env.SESSIONFOLD_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`crash-append seed ${seed} (SESSIONFOLD_CRASH_SEED to repeat)`);
    const rand = random(seed);
    const pool = new ChildPool(() => new ChildOutput(startChild('appender', [])), 3);
    let dir = '';
    let streams: StreamId[] = [];
    let acks: Ack[] = [];
    let acked = 0;
    try {
      for (let kill = 0; kill < KILLS; kill++) {
        if (kill % KILLS_PER_DIRECTORY === 0) {
          dir = freshDir();
          streams = [randomStream('a'), randomStream('b')];
          acks = [];
        }
        const current = pool.take();
        current.child.stdin?.write(`go ${dir} ${streams.join(',')} 4\n`);
        const open = await current.waitFor((line) => line.startsWith('open ') || line.startsWith('ack '));
        const run = open.split(' ')[1] as string;
        await current.waitFor((line) => line.startsWith('ack '));
        await new Promise((resolve) => setTimeout(resolve, Math.floor(rand() * 40)));
        await current.kill();
        const mine = parseAcks(current, run);
        acks.push(...mine);
        acked += mine.length;
        // Read-only: checks without repairing; the next child's writer open cuts the torn tail itself.
        const store = await fileStore({ directory: dir, readOnly: true });
        try {
          for (const stream of streams) {
            checkStream(
              stream,
              await eventsOf(store, stream),
              acks.filter((ack) => ack.stream === stream),
            );
          }
        } finally {
          await store.close();
        }
      }
    } finally {
      await pool.dispose();
    }
    expect(acked).toBeGreaterThan(KILLS);
  });
});
