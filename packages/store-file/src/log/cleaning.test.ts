import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConcurrencyError, type EventStore } from '@sessionfold/core/kernel';
import { fileStore } from '../index.js';
import { collect, freshDir, linesOf, segmentsOf, withoutIndexSnapshots } from '../test-support.fixture.js';
import { setSegmentBytesForTests } from './log-writer.js';

let previous: number;
beforeEach(() => {
  previous = setSegmentBytesForTests(4096);
});
afterEach(() => {
  setSegmentBytesForTests(previous);
});

/** Everything a reader can see of a store: each stream's read, the feed and the blobs of `owner`. */
async function everything(store: EventStore, streams: readonly string[]) {
  const reads: Record<string, unknown> = {};
  for (const stream of streams) {
    const read = await store.read(stream);
    reads[stream] = { revision: read.revision, snapshot: read.snapshot, events: await collect(read.events) };
  }
  return { reads, feed: await collect(store.readAll()), listed: await collect(store.streams()) };
}

const logBytes = (dir: string) => segmentsOf(dir).reduce((sum, path) => sum + statSync(path).size, 0);

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('cleaning sealed segments', () => {
  it('reclaims the lines a compaction and a deletion left dead; every read, the feed and a reopen see the same', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const streams = ['compacted', 'deleted', 'kept'];
    for (let n = 0; n < 60; n++) {
      for (const stream of streams) await store.append(stream, [{ type: 'Step', data: { n, pad: 'x'.repeat(40) } }], { expectedRevision: n });
    }
    await store.putBlob('deleted', new Uint8Array([1, 2, 3]));
    const kept = await store.putBlob('kept', new Uint8Array([4, 5, 6]));
    await store.compact('compacted', { revision: 55, state: { upTo: 55 }, identity: { stream: 'compacted', schemaVersion: 1 } });
    await store.deleteStream('deleted', { expectedRevision: 60 });
    const before = logBytes(dir);
    const segmentsBefore = segmentsOf(dir).length;
    // A later flush finds the dead segments and cleans them in the background.
    for (let n = 60; n < 140; n++) await store.append('kept', [{ type: 'Step', data: { n, pad: 'y'.repeat(40) } }], { expectedRevision: n });
    await until(() => readdirSync(join(dir, 'log')).every((name) => !name.endsWith('.tmp')) && logBytes(dir) < before, 'cleaning');
    expect(segmentsOf(dir).length).toBeGreaterThanOrEqual(segmentsBefore);
    const seen = await everything(store, streams);
    expect((seen.reads.compacted as { events: unknown[] }).events).toHaveLength(5);
    expect(seen.reads.deleted).toEqual({ revision: 0, snapshot: undefined, events: [] });
    expect(await store.getBlob(kept)).toEqual(new Uint8Array([4, 5, 6]));
    await expect(store.append('deleted', [{ type: 'Again', data: {} }], { expectedRevision: 'never_existed' })).rejects.toBeInstanceOf(ConcurrencyError);
    expect((await store.verify()).problems).toEqual([]);
    await store.close();

    for (const fresh of [false, true]) {
      if (fresh) withoutIndexSnapshots(dir);
      const reopened = await fileStore({ directory: dir });
      expect(await everything(reopened, streams)).toEqual(seen);
      expect(await collect(reopened.blobs('kept'))).toEqual([kept]);
      await expect(reopened.append('deleted', [{ type: 'Again', data: {} }], { expectedRevision: 'never_existed' })).rejects.toBeInstanceOf(ConcurrencyError);
      await reopened.close();
    }
  });

  it('cleans a segment larger than what it reads at a time, lines cut between two reads and a line longer than one read among them', async () => {
    setSegmentBytesForTests(6 * 1024 * 1024);
    const dir = freshDir();
    const store = await fileStore({ directory: dir, maxEventBytes: 2 * 1024 * 1024 });
    const streams = ['live', 'also-live', 'dead'];
    const revisions = new Map<string, number>();
    // Lines of odd lengths, so the chunk boundaries fall inside lines; one live event of 1.5 MiB spans a whole read.
    // Two live streams interleaved: a line the cleaning put elsewhere than the index says reads as the other's.
    for (let n = 0; n < 1500; n++) {
      const stream = n % 4 === 0 ? 'live' : n % 4 === 2 ? 'also-live' : 'dead';
      const revision = revisions.get(stream) ?? 0;
      revisions.set(stream, revision + 1);
      const pad = n === 300 ? 'L'.repeat(1536 * 1024) : 'p'.repeat((stream === 'dead' ? 6000 : 200) + ((n * 7919) % 5000));
      await store.append(stream, [{ type: 'Step', data: { n, pad } }], { expectedRevision: revision });
    }
    await store.deleteStream('dead', { expectedRevision: 'any' });
    const written = segmentsOf(dir).map((path) => [path, statSync(path).size] as const);
    expect(written.length).toBeGreaterThanOrEqual(2);
    // Appends until the segment active at the deletion is sealed too; each flush lets the cleaning start.
    for (let n = 0; segmentsOf(dir).length <= written.length; n++) {
      await store.append('probe', [{ type: 'Step', data: { n, pad: 'q'.repeat(20_000) } }], { expectedRevision: n });
    }
    await store.append('probe', [{ type: 'Step', data: {} }], { expectedRevision: 'any' });
    const [first, size] = written[0] as readonly [string, number];
    await until(() => statSync(first).size < size / 2, 'cleaning');
    // Read once the cleaning has pointed the index at the new file (right after its rename and directory sync).
    await until(() => readdirSync(join(dir, 'log')).every((name) => !name.endsWith('.tmp')), 'the cleaning to finish');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const live = await collect((await store.read('live')).events);
    expect(live.map((event) => (event.data as { n: number }).n)).toEqual(Array.from({ length: 375 }, (_, k) => 4 * k));
    expect((live[75]?.data as { pad: string }).pad.length).toBe(1536 * 1024);
    const alsoLive = await collect((await store.read('also-live')).events);
    expect(alsoLive.map((event) => (event.data as { n: number }).n)).toEqual(Array.from({ length: 375 }, (_, k) => 4 * k + 2));
    expect((await store.verify()).problems).toEqual([]);
    const seen = await everything(store, streams);
    await store.close();
    withoutIndexSnapshots(dir);
    const reopened = await fileStore({ directory: dir, maxEventBytes: 2 * 1024 * 1024 });
    expect(await everything(reopened, streams)).toEqual(seen);
    await reopened.close();
  });

  it('a stream whose dead lines were cleaned from some segments and not others reads, verifies and reopens whole', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    // The first segment is mostly the kept stream's (never cleaned); the deleted stream's later lines fill the next ones.
    await store.append('gone', [{ type: 'Step', data: { n: 0 } }], { expectedRevision: 'no_stream' });
    for (let n = 0; n < 10; n++) await store.append('kept', [{ type: 'Step', data: { n, pad: 'k'.repeat(80) } }], { expectedRevision: n });
    // Revision 2 starts a segment of its own, so the segments after the first hold the dead revisions only.
    setSegmentBytesForTests(1);
    await store.append('gone', [{ type: 'Step', data: { n: 1, pad: 'g'.repeat(80) } }], { expectedRevision: 1 });
    setSegmentBytesForTests(4096);
    for (let n = 2; n < 120; n++) await store.append('gone', [{ type: 'Step', data: { n, pad: 'g'.repeat(80) } }], { expectedRevision: n });
    await store.compact('gone', { revision: 60, state: { upTo: 60 }, identity: { stream: 'gone', schemaVersion: 1 } });
    const before = logBytes(dir);
    for (let n = 10; n < 40; n++) await store.append('kept', [{ type: 'Step', data: { n, pad: 'k'.repeat(80) } }], { expectedRevision: n });
    await until(() => logBytes(dir) < before, 'cleaning');
    // What the test is about: revision 1 is still in the first segment while later dead revisions are gone.
    const goneRevisions = linesOf(dir, 'gone').map((line) => line.payload.revision as number);
    expect(goneRevisions[0]).toBe(1);
    expect(goneRevisions[1]).toBeGreaterThan(2);
    await store.deleteStream('gone', { expectedRevision: 120 });
    for (let n = 40; n < 70; n++) await store.append('kept', [{ type: 'Step', data: { n, pad: 'k'.repeat(80) } }], { expectedRevision: n });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const seen = await everything(store, ['gone', 'kept']);
    expect((await store.verify()).problems).toEqual([]);
    await store.close();
    withoutIndexSnapshots(dir);
    const reopened = await fileStore({ directory: dir, readOnly: true });
    expect(await everything(reopened, ['gone', 'kept'])).toEqual(seen);
    expect((await reopened.verify()).problems).toEqual([]);
    await reopened.close();
  });

  it('a read-only view opened before a cleaning reads the same afterwards', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    for (let n = 0; n < 100; n++) await store.append('a', [{ type: 'Step', data: { n, pad: 'x'.repeat(40) } }], { expectedRevision: n });
    const view = await fileStore({ directory: dir, readOnly: true });
    await store.compact('a', { revision: 95, state: { upTo: 95 }, identity: { stream: 'a', schemaVersion: 1 } });
    const before = logBytes(dir);
    for (let n = 100; n < 160; n++) await store.append('b', [{ type: 'Step', data: { n, pad: 'y'.repeat(40) } }], { expectedRevision: n - 100 });
    await until(() => logBytes(dir) < before, 'cleaning');
    const fromWriter = await everything(store, ['a', 'b']);
    expect(await everything(view, ['a', 'b'])).toEqual(fromWriter);
    await view.close();
    await store.close();
  });
});

describe('index snapshots', () => {
  it('a writer saves one at close; the next open reads only the log after it, and reads as a full scan does', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    for (let n = 0; n < 30; n++)
      await store.append(
        `s-${n % 3}`,
        [
          { type: 'Step', data: { n } },
          { type: 'Step', data: { n } },
        ],
        { expectedRevision: 'any' },
      );
    await store.append('ids', [{ type: 'Once', data: {}, eventId: 'once-1' }], { expectedRevision: 'no_stream' });
    await store.close();
    expect(readdirSync(join(dir, 'index'))).toHaveLength(1);
    const streams = ['s-0', 's-1', 's-2', 'ids'];
    const reopened = await fileStore({ directory: dir });
    const seen = await everything(reopened, streams);
    // An event id survives through the snapshot: the retried append is recognised.
    expect(await reopened.append('ids', [{ type: 'Once', data: {}, eventId: 'once-1' }], { expectedRevision: 'no_stream' })).toEqual({
      revision: 1,
      position: 61,
    });
    await reopened.append('s-0', [{ type: 'After', data: {} }], { expectedRevision: 20 });
    await reopened.close();
    withoutIndexSnapshots(dir);
    const scanned = await fileStore({ directory: dir, readOnly: true });
    const after = await everything(scanned, streams);
    expect(after.reads['s-1']).toEqual(seen.reads['s-1']);
    expect((after.reads['s-0'] as { revision: number }).revision).toBe(21);
    await scanned.close();
  });
});
