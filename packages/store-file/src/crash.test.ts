import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RecordedEvent, StreamId } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { ChildOutput, ChildPool, collect, eventsOf, random, randomStream, startChild } from './test-support.fixture.js';

// The two kill loops run concurrently: a child spends most of its short life loading, so one loop's
// children load while the other loop checks a store.

const APPEND_KILLS = Number(process.env.SESSIONFOLD_CRASH_KILLS ?? 58);
const COMPACT_KILLS = Number(process.env.SESSIONFOLD_CRASH_COMPACT_KILLS ?? 42);
/** Kills per store directory: recovery is exercised again and again, while journals stay small enough to re-check in full each time. */
const KILLS_PER_DIRECTORY = 10;
/** Each child loads the TypeScript sources through a loader, which on a loaded 2-core machine takes seconds: room beyond the project's default. */
const CRASH_TEST_TIMEOUT = 300_000;

/** Temporary directories of one test, removed when it ends (the tests run concurrently, so no shared hook). */
function tempDirs() {
  const made: string[] = [];
  return {
    make: () => {
      const dir = mkdtempSync(join(tmpdir(), 'sessionfold-crash-'));
      made.push(dir);
      return dir;
    },
    remove: () => {
      for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

function seedOf(label: string): number {
  const seed = Number(process.env.SESSIONFOLD_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(`${label} seed ${seed} (SESSIONFOLD_CRASH_SEED to repeat)`);
  return seed;
}

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

/** The fold of events 1..revision where event k carries { n: k }. */
const expectedState = (revision: number) => ({ count: revision, sum: (revision * (revision + 1)) / 2 });

describe.concurrent('SIGKILL', { timeout: CRASH_TEST_TIMEOUT }, () => {
  it(`while appending: every acknowledged batch survives whole and revisions stay gap-free (${APPEND_KILLS} kills)`, async ({ expect }) => {
    const rand = random(seedOf('crash-append'));
    const dirs = tempDirs();
    const pool = new ChildPool(() => new ChildOutput(startChild('appender', [])), 3);
    let dir = '';
    let streams: StreamId[] = [];
    let acks: Ack[] = [];
    let acked = 0;
    try {
      for (let kill = 0; kill < APPEND_KILLS; kill++) {
        if (kill % KILLS_PER_DIRECTORY === 0) {
          dir = dirs.make();
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
      dirs.remove();
    }
    expect(acked).toBeGreaterThan(APPEND_KILLS);
  });

  it(`during compaction: the stream folds to the same state after a kill at any point (${COMPACT_KILLS} kills)`, async ({ expect }) => {
    const rand = random(seedOf('crash-compact'));
    const dirs = tempDirs();
    const dir = dirs.make();
    const stream = randomStream('c');
    const pool = new ChildPool(() => new ChildOutput(startChild('compactor', [dir, stream])), 3);
    let lastAcked = 0;
    let compactions = 0;
    try {
      for (let kill = 0; kill < COMPACT_KILLS; kill++) {
        const child = pool.take();
        child.child.stdin?.write('go\n');
        await child.waitFor((line) => line.startsWith('compacted '));
        await new Promise((resolve) => setTimeout(resolve, Math.floor(rand() * 30)));
        await child.kill();
        for (const line of child.lines) {
          if (line.startsWith('ack ')) lastAcked = Math.max(lastAcked, Number(line.slice(4)));
          if (line.startsWith('compacted ')) compactions++;
        }
        // Read-only: checks without repairing; the next child's writer open cuts the torn tail itself.
        const store = await fileStore({ directory: dir, readOnly: true });
        try {
          const read = await store.read(stream);
          expect(read.revision, 'every acknowledged append survives').toBeGreaterThanOrEqual(lastAcked);
          let state = (read.snapshot?.state as { count: number; sum: number } | undefined) ?? { count: 0, sum: 0 };
          let revision = read.snapshot?.revision ?? 0;
          for await (const event of read.events) {
            expect(event.revision).toBe(revision + 1);
            expect((event.data as { n: number }).n).toBe(event.revision);
            state = { count: state.count + 1, sum: state.sum + (event.data as { n: number }).n };
            revision = event.revision;
          }
          expect(revision).toBe(read.revision);
          expect(state, `kill ${kill}: folds to the state of revisions 1..${revision}`).toEqual(expectedState(revision));
          // A consumer of the change feed from the start converges on the same state.
          let feedState = { count: 0, sum: 0 };
          let feedRevision = 0;
          for (const record of await collect(store.readAll())) {
            if (record.type === '$snapshot') {
              const snapshot = record.data as unknown as { revision: number; state: { count: number; sum: number } };
              if (snapshot.revision > feedRevision) [feedState, feedRevision] = [snapshot.state, snapshot.revision];
            } else if (record.revision === feedRevision + 1) {
              feedState = { count: feedState.count + 1, sum: feedState.sum + (record.data as { n: number }).n };
              feedRevision = record.revision;
            }
          }
          expect(feedState).toEqual(state);
        } finally {
          await store.close();
        }
      }
    } finally {
      await pool.dispose();
      dirs.remove();
    }
    expect(compactions).toBeGreaterThanOrEqual(COMPACT_KILLS);
  });
});
