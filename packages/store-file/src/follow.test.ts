import { describe, expect, it } from 'vitest';
import { SNAPSHOT_RECORD, type RecordedEvent, type Snapshot } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { ChildOutput, collect, freshDir, randomStream, startChild } from './test-support.fixture.js';

/** Folds what a follower saw of the compactor child's stream: events add `n`, a $snapshot replaces the state. */
function fold(records: RecordedEvent[]): { count: number; sum: number; revision: number } {
  let state = { count: 0, sum: 0, revision: 0 };
  for (const record of records) {
    if (record.type === SNAPSHOT_RECORD) {
      const snapshot = record.data as unknown as Snapshot;
      state = { ...(snapshot.state as { count: number; sum: number }), revision: snapshot.revision };
    } else {
      expect(record.revision, 'an event follows the revision before it').toBe(state.revision + 1);
      state = { count: state.count + 1, sum: state.sum + (record.data as { n: number }).n, revision: record.revision };
    }
  }
  return state;
}

describe('follow on a read-only view', () => {
  it('follows a writer process that appends and compacts, through every replacement of the files, once and in order', async () => {
    const directory = freshDir();
    const stream = randomStream('followed');
    // The view opens on an existing store, before the writer starts.
    await (await fileStore({ directory })).close();
    const view = await fileStore({ directory, readOnly: true });
    const controller = new AbortController();
    const seen: RecordedEvent[] = [];
    const following = (async () => {
      for await (const record of view.follow!({ signal: controller.signal })) seen.push(record);
    })();
    // Paced so that a compaction stays in place longer than a view's follow waits for changes to settle: a stream
    // compacted more often than that shows its new snapshots to a view's follower only once compaction pauses.
    const child = new ChildOutput(startChild('compactor', [directory, stream, '80']));
    child.child.stdin?.write('go\n');
    await child.waitFor((line) => line.startsWith('compacted ') && Number(line.split(' ')[1]) >= 40);
    // Live, not only at the end: records arrive while the writer goes on replacing the files.
    const liveUntil = Date.now() + 10_000;
    while (seen.length === 0 && Date.now() < liveUntil) await new Promise((resolve) => setTimeout(resolve, 10));
    const seenWhileWriting = seen.length;
    await child.kill();
    // Everything the killed writer left, as a fresh view reads it: the follower must reach its last position.
    const fresh = await fileStore({ directory, readOnly: true });
    const feed = await collect(fresh.readAll());
    const truth = await fresh.read(stream);
    const events = await collect(truth.events);
    await fresh.close();
    const last = feed.at(-1)!.position;
    const deadline = Date.now() + 10_000;
    while ((seen.at(-1)?.position ?? 0) < last && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    await following;
    await view.close();
    const positions = seen.map((r) => r.position);
    expect(positions).toEqual([...new Set(positions)].sort((a, b) => a - b));
    expect(positions.at(-1)).toBe(last);
    expect(seenWhileWriting).toBeGreaterThan(0);
    // The writer compacts every other append, so the follower's records include snapshots (the final one at least).
    expect(seen.some((r) => r.type === SNAPSHOT_RECORD)).toBe(true);
    const expected = fold([...(truth.snapshot ? [{ type: SNAPSHOT_RECORD, data: truth.snapshot } as unknown as RecordedEvent] : []), ...events]);
    expect(fold(seen)).toEqual(expected);
  });
});
