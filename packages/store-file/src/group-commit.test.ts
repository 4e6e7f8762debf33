import { describe, expect, it } from 'vitest';
import { ConcurrencyError, type StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { collect, eventsOf, freshDir, randomStream } from './test-support.fixture.js';

/** Counts journal writes and fdatasyncs, and can hold fdatasyncs of chosen streams until released. */
function countingFs() {
  const journals = new Map<number, StreamId>();
  const counts = { writes: 0, syncs: 0, inSync: 0, maxInSync: 0 };
  const held = new Map<StreamId, Promise<void>>();
  // A new journal may be a blank opened under its own name and renamed into place: its descriptor is the journal's then.
  const writable = new Map<string, number>();
  const fs: Partial<FileSystem> = {
    open: async (path, flags, mode) => {
      const fd = await nodeFileSystem.open(path, flags, mode);
      if (flags !== 'r') writable.set(path, fd);
      const match = /streams\/([^/]+)\.jsonl$/.exec(path);
      if (match && flags !== 'r') journals.set(fd, match[1] as StreamId);
      return fd;
    },
    rename: async (from, to) => {
      await nodeFileSystem.rename(from, to);
      const match = /streams\/([^/]+)\.jsonl$/.exec(to);
      const fd = writable.get(from);
      if (match && fd !== undefined) journals.set(fd, match[1] as StreamId);
    },
    close: async (fd) => {
      journals.delete(fd);
      await nodeFileSystem.close(fd);
    },
    write: async (fd, ...rest) => {
      if (journals.has(fd)) counts.writes++;
      return nodeFileSystem.write(fd, ...rest);
    },
    fdatasync: async (fd) => {
      const stream = journals.get(fd);
      if (stream !== undefined) {
        counts.syncs++;
        counts.inSync++;
        counts.maxInSync = Math.max(counts.maxInSync, counts.inSync);
        await held.get(stream);
      }
      try {
        await nodeFileSystem.fdatasync(fd);
      } finally {
        if (stream !== undefined) counts.inSync--;
      }
    },
  };
  return { fs, counts, held };
}

describe('group commit', () => {
  it('a lone append to an existing journal costs exactly one write and one fdatasync', async () => {
    const { fs, counts } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const stream = randomStream();
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const before = { ...counts };
    await store.append(
      stream,
      [
        { type: 'A', data: 2 },
        { type: 'A', data: 3 },
      ],
      { expectedRevision: 1 },
    );
    expect(counts.writes - before.writes).toBe(1);
    expect(counts.syncs - before.syncs).toBe(1);
    await store.close();
  });

  it('concurrent appends to one stream share one write and one fdatasync, each keeping its own result', async () => {
    const { fs, counts } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const stream = randomStream();
    await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    const before = { ...counts };
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        store.append(
          stream,
          [
            { type: 'A', data: i },
            { type: 'B', data: i },
          ],
          { expectedRevision: 'any' },
        ),
      ),
    );
    expect(counts.writes - before.writes).toBe(1);
    expect(counts.syncs - before.syncs).toBe(1);
    expect(results.map((r) => r.revision)).toEqual(Array.from({ length: 64 }, (_, i) => 3 + 2 * i));
    const events = await eventsOf(store, stream);
    expect(events.map((e) => e.revision)).toEqual(Array.from({ length: 129 }, (_, i) => i + 1));
    await store.close();
  });

  it('checks each expected revision against the queued head: of two appends expecting the same revision, one conflicts', async () => {
    const store = await fileStore({ directory: freshDir() });
    const stream = randomStream();
    const [first, second] = await Promise.allSettled([
      store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' }),
      store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 'no_stream' }),
    ]);
    expect(first.status).toBe('fulfilled');
    expect(second.status === 'rejected' && second.reason instanceof ConcurrencyError).toBe(true);
    const chained = await Promise.all([
      store.append(stream, [{ type: 'B', data: 2 }], { expectedRevision: 1 }),
      store.append(stream, [{ type: 'B', data: 3 }], { expectedRevision: 2 }),
    ]);
    expect(chained.map((r) => r.revision)).toEqual([2, 3]);
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([1, 2, 3]);
    await store.close();
  });

  it('appends to different streams flush in parallel, not one after another', async () => {
    const { fs, counts, held } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const streams = Array.from({ length: 4 }, (_, i) => randomStream(`p${i}`));
    for (const stream of streams) await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    for (const stream of streams) held.set(stream, gate);
    counts.maxInSync = 0;
    const pending = Promise.all(streams.map((stream) => store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 1 })));
    // All four fdatasyncs are in flight at once while the gate is closed.
    for (let i = 0; i < 400 && counts.inSync < streams.length; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(counts.maxInSync).toBe(4);
    release();
    await pending;
    await store.close();
  });

  it('readAll never shows a later position while an earlier one is still being written', async () => {
    const { fs, held } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const [slow, fast] = [randomStream('slow'), randomStream('fast')];
    await store.append(slow, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    await store.append(fast, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    let release!: () => void;
    held.set(slow, new Promise<void>((resolve) => (release = resolve)));
    const slowAppend = store.append(slow, [{ type: 'S', data: 1 }], { expectedRevision: 1 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const fastResult = await store.append(fast, [{ type: 'F', data: 1 }], { expectedRevision: 1 });
    expect(fastResult.position).toBe(4);
    // Position 4 is durable but 3 is not settled: a reader stops before 3, so it cannot skip it later.
    expect((await collect(store.readAll())).map((r) => r.position)).toEqual([1, 2]);
    expect(await collect(store.readAll({ fromPosition: 3 }))).toEqual([]);
    release();
    await slowAppend;
    expect((await collect(store.readAll({ fromPosition: 3 }))).map((r) => [r.position, r.type])).toEqual([
      [3, 'S'],
      [4, 'F'],
    ]);
    await store.close();
  });

  it('an event id retried while its first append is still queued resolves with that append result', async () => {
    const store = await fileStore({ directory: freshDir() });
    const stream = randomStream();
    const [a, b] = await Promise.all([
      store.append(stream, [{ type: 'A', data: 1, eventId: 'e-1' }], { expectedRevision: 'no_stream' }),
      store.append(stream, [{ type: 'A', data: 1, eventId: 'e-1' }], { expectedRevision: 'no_stream' }),
    ]);
    expect(b).toEqual(a);
    expect((await eventsOf(store, stream)).length).toBe(1);
    await store.close();
  });

  it('keeps the number of open journal descriptors bounded however many streams are written', async () => {
    let open = 0;
    let most = 0;
    const writers = new Set<number>();
    const fs: Partial<FileSystem> = {
      open: async (path, flags, mode) => {
        const fd = await nodeFileSystem.open(path, flags, mode);
        if (path.endsWith('.jsonl') && flags !== 'r') {
          writers.add(fd);
          most = Math.max(most, ++open);
        }
        return fd;
      },
      close: async (fd) => {
        if (writers.delete(fd)) open--;
        await nodeFileSystem.close(fd);
      },
    };
    const dir = freshDir();
    const store = await fileStore({ directory: dir, fs });
    const streams = Array.from({ length: 400 }, (_, i) => randomStream(`n${i}`));
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < streams.length; i += 50) {
        await Promise.all(streams.slice(i, i + 50).map((s) => store.append(s, [{ type: 'A', data: round }], { expectedRevision: round })));
      }
    }
    expect(most).toBeLessThanOrEqual(256 + 50);
    expect((await collect(store.streams())).length).toBe(400);
    await store.close();
    expect(open).toBe(0);
  });

  it('an append accepted before close still completes and is durable', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const store = await fileStore({ directory: dir });
    const appended = store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.close();
    expect((await appended).revision).toBe(1);
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => e.data)).toEqual([1]);
    await reopened.close();
  });
});

describe('the first append of a stream without a blank journal', () => {
  it("waits on the journal's fdatasync and its directory's fsync together, and is acknowledged only once both are done", async () => {
    const steps: string[] = [];
    let releaseData!: () => void;
    let releaseDir!: () => void;
    const dataHeld = new Promise<void>((resolve) => (releaseData = resolve));
    const dirHeld = new Promise<void>((resolve) => (releaseDir = resolve));
    let armed = false;
    const fs: Partial<FileSystem> = {
      // No blank journals (their directory refuses new files): the journal is created, and its name needs the fsync.
      open: async (path, flags, mode) => {
        if (/\/blanks\/blank-/.test(path) && flags !== 'r') throw Object.assign(new Error('EACCES: injected'), { code: 'EACCES' });
        return nodeFileSystem.open(path, flags, mode);
      },
      fdatasync: async (fd) => {
        if (armed) {
          steps.push('fdatasync');
          await dataHeld;
        }
        return nodeFileSystem.fdatasync(fd);
      },
      fsync: async (fd) => {
        if (armed) {
          steps.push('fsync');
          await dirHeld;
        }
        return nodeFileSystem.fsync(fd);
      },
    };
    const store = await fileStore({ directory: freshDir(), fs });
    armed = true;
    let acknowledged = false;
    const append = store.append(randomStream(), [{ type: 'E', data: 1 }], { expectedRevision: 'no_stream' }).then((result) => {
      acknowledged = true;
      return result;
    });
    // Both start before either is let go (bounded wait, so a store that syncs them one after the other fails here instead of hanging).
    for (let tries = 0; steps.length < 2 && tries < 200; tries++) await new Promise((resolve) => setTimeout(resolve, 5));
    releaseData();
    expect(steps.sort()).toEqual(['fdatasync', 'fsync']);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(acknowledged).toBe(false);
    releaseDir();
    expect((await append).revision).toBe(1);
    armed = false;
    await store.close();
  });
});
