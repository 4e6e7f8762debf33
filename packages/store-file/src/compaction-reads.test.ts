import { describe, expect, it } from 'vitest';
import { SNAPSHOT_RECORD, type EventStore, type RecordedEvent, type StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { collect, freshDir, randomStream } from './test-support.fixture.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A slow disk: every fdatasync takes 200 ms, which holds a compaction (its `$snapshot` line written, not yet
 * durable) open across many reads, while `slow.on`.
 */
const slow = { on: false };
const slowFs: Partial<FileSystem> = {
  fdatasync: async (fd) => {
    if (slow.on) await sleep(200);
    return nodeFileSystem.fdatasync(fd);
  },
};

const snapshotAt = (stream: StreamId, revision: number) => ({ revision, state: { upTo: revision }, identity: { stream, schemaVersion: 1 } });
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** 100 events in batches of 10, compacted at 30. */
async function compactedStream(store: EventStore, stream: StreamId): Promise<void> {
  for (let batch = 0; batch < 10; batch++) {
    await store.append(
      stream,
      range(1, 10).map((n) => ({ type: 'Counted', data: { n: batch * 10 + n } })),
      { expectedRevision: batch * 10 },
    );
  }
  await store.compact(stream, snapshotAt(stream, 30));
}

/** What a read shows, in a form two reads can be compared by: snapshot revision and event revisions. */
async function readShape(store: EventStore, stream: StreamId): Promise<string> {
  const read = await store.read(stream);
  const events = await collect(read.events);
  for (const event of events) expect(event.data).toEqual({ n: event.revision });
  return `revision ${read.revision}, snapshot ${read.snapshot?.revision ?? '-'}, events ${events.map((e) => e.revision).join(',')}`;
}

function feedShape(records: RecordedEvent[]): string {
  return records.map((r) => (r.type === SNAPSHOT_RECORD ? `$${r.revision}` : `${r.revision}`)).join(',');
}

/** Runs `probe` every 5 ms until `work` settles; returns every outcome (a shape or an error's message). Ends the slow disk. */
async function probeDuring(work: Promise<unknown>, probe: () => Promise<string>): Promise<string[]> {
  let done = false;
  const finished = work.finally(() => {
    done = true;
    slow.on = false;
  });
  const seen: string[] = [];
  while (!done) {
    seen.push(await probe().catch((error: Error) => `error ${error.name}: ${error.message}`));
    await sleep(5);
  }
  await finished;
  return seen;
}

describe('reads during a compaction see the stream before it or after it, never a mix', () => {
  const before = `revision 100, snapshot 30, events ${range(31, 100).join(',')}`;
  const after = `revision 100, snapshot 60, events ${range(61, 100).join(',')}`;

  it('read() on the writer', async () => {
    const store = await fileStore({ directory: freshDir(), fs: slowFs });
    const s = randomStream();
    await compactedStream(store, s);
    slow.on = true;
    const seen = await probeDuring(store.compact(s, snapshotAt(s, 60)), () => readShape(store, s));
    expect(seen.length).toBeGreaterThan(5);
    expect(seen.filter((shape) => shape !== before && shape !== after)).toEqual([]);
    expect(await readShape(store, s)).toBe(after);
    await store.close();
  });

  it('readAll() on the writer', async () => {
    const store = await fileStore({ directory: freshDir(), fs: slowFs });
    const s = randomStream();
    await compactedStream(store, s);
    const feedBefore = feedShape(await collect(store.readAll()));
    expect(feedBefore).toBe(`${range(31, 100).join(',')},$30`);
    slow.on = true;
    const seen = await probeDuring(store.compact(s, snapshotAt(s, 60)), async () => feedShape(await collect(store.readAll())));
    const feedAfter = `${range(61, 100).join(',')},$60`;
    expect(seen.filter((shape) => shape !== feedBefore && shape !== feedAfter)).toEqual([]);
    expect(feedShape(await collect(store.readAll()))).toBe(feedAfter);
    await store.close();
  });

  it('read() on a read-only view of the writer’s directory', async () => {
    const directory = freshDir();
    const store = await fileStore({ directory, fs: slowFs });
    const s = randomStream();
    await compactedStream(store, s);
    const view = await fileStore({ directory, readOnly: true });
    slow.on = true;
    const seen = await probeDuring(store.compact(s, snapshotAt(s, 60)), () => readShape(view, s));
    expect(seen.filter((shape) => shape !== before && shape !== after)).toEqual([]);
    expect(await readShape(view, s)).toBe(after);
    await view.close();
    await store.close();
  });
});

describe('a deletion holds the feed back only until its $deleted record is durable', () => {
  it('appends to other streams show in readAll while the blobs of the deleted stream are still being removed', async () => {
    let slowUnlinks = false;
    const store = await fileStore({
      directory: freshDir(),
      fs: {
        unlink: async (path) => {
          if (slowUnlinks && path.includes('/blobs/')) await sleep(300);
          return nodeFileSystem.unlink(path);
        },
      },
    });
    const [s, other] = [randomStream('s'), randomStream('other')];
    await compactedStream(store, s);
    await store.putBlob(s, new Uint8Array([1, 2, 3]));
    slowUnlinks = true;
    let done = false;
    const deletion = store.deleteStream(s, { expectedRevision: 100 }).finally(() => (done = true));
    let feed = await collect(store.readAll());
    // Wait for the $deleted record; the blob is removed only after it is durable.
    while (!feed.some((r) => r.streamId === s && r.type === '$deleted')) {
      await sleep(5);
      feed = await collect(store.readAll());
    }
    const { position } = await store.append(other, [{ type: 'Elsewhere', data: 1 }], { expectedRevision: 'no_stream' });
    feed = await collect(store.readAll());
    expect(done).toBe(false);
    expect(feed.map((r) => `${r.streamId === s ? 's' : 'other'}:${r.type}`)).toEqual(['s:$deleted', 'other:Elsewhere']);
    expect(feed.at(-1)?.position).toBe(position);
    expect((await store.read(s)).revision).toBe(0);
    await deletion;
    await store.close();
  });
});

describe('a read is one state of the stream', () => {
  it('its events end at the revision it returned, even when appends land while it opens the segment', async () => {
    let slowOpens = false;
    const store = await fileStore({
      directory: freshDir(),
      fs: {
        open: async (path, flags, mode) => {
          if (slowOpens && flags === 'r' && path.endsWith('.jsonl')) await sleep(50);
          return nodeFileSystem.open(path, flags, mode);
        },
      },
    });
    const s = randomStream();
    await store.append(s, [{ type: 'N', data: 1 }], { expectedRevision: 'no_stream' });
    slowOpens = true;
    const reading = store.read(s);
    await sleep(10);
    await store.append(s, [{ type: 'N', data: 2 }], { expectedRevision: 1 });
    const read = await reading;
    expect({ revision: read.revision, events: (await collect(read.events)).map((e) => e.revision) }).toEqual({ revision: 1, events: [1] });
    await store.close();
  });
});

describe('versions kept for readers', () => {
  it('hold no descriptor once the store is closed, whether their readers finished, were abandoned or never started', async () => {
    const open = new Set<number>();
    const counting: Partial<FileSystem> = {
      open: async (path, flags, mode) => {
        const fd = await nodeFileSystem.open(path, flags, mode);
        open.add(fd);
        return fd;
      },
      close: async (fd) => {
        open.delete(fd);
        return nodeFileSystem.close(fd);
      },
    };
    const store = await fileStore({ directory: freshDir(), fs: counting });
    const s = randomStream();
    await compactedStream(store, s);
    const finished = collect(store.readAll());
    const abandoned = store.readAll()[Symbol.asyncIterator]();
    await abandoned.next();
    const neverIterated = await store.read(s);
    const halfRead = (await store.read(s)).events[Symbol.asyncIterator]();
    await halfRead.next();
    await store.compact(s, snapshotAt(s, 60));
    await store.compact(s, snapshotAt(s, 90));
    await finished;
    expect(neverIterated.revision).toBe(100);
    await store.close();
    await sleep(20);
    expect(open.size).toBe(0);
  });
});
