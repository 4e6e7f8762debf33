import { describe, expect, it } from 'vitest';
import { fileStore } from './index.js';
import { ChildOutput, ChildPool, collect, freshDir, random, randomStream, startChild } from './test-support.fixture.js';

const KILLS = Number(process.env.SESSIONFOLD_CRASH_COMPACT_KILLS ?? 42);

/** The fold of events 1..revision where event k carries { n: k }. */
const expectedState = (revision: number) => ({ count: revision, sum: (revision * (revision + 1)) / 2 });

describe('SIGKILL during compaction', () => {
  it(`the stream folds to the same state after a kill at any point of a compaction (${KILLS} kills)`, async () => {
    const seed = Number(process.env.SESSIONFOLD_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`crash-compact seed ${seed} (SESSIONFOLD_CRASH_SEED to repeat)`);
    const rand = random(seed);
    const dir = freshDir();
    const stream = randomStream('c');
    const pool = new ChildPool(() => new ChildOutput(startChild('compactor', [dir, stream])), 3);
    let lastAcked = 0;
    let compactions = 0;
    try {
      for (let kill = 0; kill < KILLS; kill++) {
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
    }
    expect(compactions).toBeGreaterThanOrEqual(KILLS);
  });
});
