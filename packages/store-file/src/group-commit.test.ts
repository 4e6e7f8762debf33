import { realpathSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConcurrencyError, StorageError } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { setSegmentBytesForTests } from './log/log-writer.js';
import { collect, eventsOf, freshDir, linesOf, logDirDescriptors, randomStream, segmentsOf } from './test-support.fixture.js';

const SEGMENT = /\/log\/\d{20}\.jsonl$/;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A sync held until released; `entered` resolves once the store is waiting on it. */
interface Hold {
  entered: Promise<void>;
  release(): void;
}

function newHold(): Hold & { enter(): Promise<void> } {
  let enter!: () => void;
  let release!: () => void;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  return {
    entered,
    release,
    enter: () => {
      enter();
      return released;
    },
  };
}

/**
 * Counts writes and fdatasyncs on the log's segments (through the descriptors the writer opens on them), can hold
 * the next segment fdatasync until released, and can make the next segment write fail with ENOSPC.
 */
function countingFs() {
  const writable = new Set<number>();
  const counts = { writes: 0, syncs: 0 };
  const holds: ReturnType<typeof newHold>[] = [];
  const faults = { fullDisk: 0 };
  const fs: Partial<FileSystem> = {
    open: async (path, flags, mode) => {
      const fd = await nodeFileSystem.open(path, flags, mode);
      if (SEGMENT.test(path) && flags !== 'r') writable.add(fd);
      return fd;
    },
    close: async (fd) => {
      writable.delete(fd);
      await nodeFileSystem.close(fd);
    },
    write: async (fd, buffer, offset, length, position) => {
      if (writable.has(fd)) {
        counts.writes++;
        if (faults.fullDisk > 0) {
          faults.fullDisk--;
          throw Object.assign(new Error('ENOSPC: injected'), { code: 'ENOSPC' });
        }
      }
      return nodeFileSystem.write(fd, buffer, offset, length, position);
    },
    fdatasync: async (fd) => {
      if (writable.has(fd)) {
        counts.syncs++;
        await holds.shift()?.enter();
      }
      return nodeFileSystem.fdatasync(fd);
    },
  };
  /** Holds the next fdatasync of a segment. */
  const holdNextSync = (): Hold => {
    const hold = newHold();
    holds.push(hold);
    return hold;
  };
  return { fs, counts, holdNextSync, faults };
}

/** Tracks whether a promise settled, without letting a rejection go unhandled. */
function watch<T>(promise: Promise<T>) {
  const state = { settled: false };
  const outcome = promise.then(
    (value) => ((state.settled = true), { value }),
    (error: unknown) => ((state.settled = true), { error }),
  );
  return { state, outcome };
}

describe('group commit', () => {
  it('a lone append costs exactly one write and one fdatasync', async () => {
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

  it('appends to one stream made while a flush is under way share one write and one fdatasync, each keeping its own result', async () => {
    const { fs, counts, holdNextSync } = countingFs();
    const dir = freshDir();
    const store = await fileStore({ directory: dir, fs });
    const stream = randomStream();
    await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    const hold = holdNextSync();
    const first = store.append(stream, [{ type: 'A', data: 'first' }], { expectedRevision: 1 });
    await hold.entered;
    const before = { ...counts };
    const queued = Promise.all(
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
    await sleep(10);
    hold.release();
    expect((await first).revision).toBe(2);
    const results = await queued;
    expect(counts.writes - before.writes).toBe(1);
    expect(counts.syncs - before.syncs).toBe(1);
    expect(results.map((r) => r.revision)).toEqual(Array.from({ length: 64 }, (_, i) => 4 + 2 * i));
    expect(results.map((r) => r.position)).toEqual(Array.from({ length: 64 }, (_, i) => 4 + 2 * i));
    const events = await eventsOf(store, stream);
    expect(events.map((e) => e.revision)).toEqual(Array.from({ length: 130 }, (_, i) => i + 1));
    // Each append's lines lie together, in the order the appends were made.
    expect(linesOf(dir, stream).map((line) => line.payload.data)).toEqual([0, 'first', ...Array.from({ length: 64 }, (_, i) => [i, i]).flat()]);
    await store.close();
  });

  it('appends made in the same turn with no flush under way share one write and one fdatasync', async () => {
    const { fs, counts } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const stream = randomStream();
    await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    const before = { ...counts };
    const results = await Promise.all(Array.from({ length: 64 }, (_, i) => store.append(stream, [{ type: 'A', data: i }], { expectedRevision: 'any' })));
    expect(counts.writes - before.writes).toBe(1);
    expect(counts.syncs - before.syncs).toBe(1);
    expect(results.map((r) => r.revision)).toEqual(Array.from({ length: 64 }, (_, i) => 2 + i));
    await store.close();
  });

  it('appends to many streams in flight together go out in one write and one fdatasync', async () => {
    const { fs, counts, holdNextSync } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const streams = Array.from({ length: 16 }, (_, i) => randomStream(`p${i}`));
    for (const stream of streams) await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    const hold = holdNextSync();
    const blocker = store.append(randomStream('blocker'), [{ type: 'B', data: 0 }], { expectedRevision: 'no_stream' });
    await hold.entered;
    const before = { ...counts };
    const pending = Promise.all(streams.map((stream, i) => store.append(stream, [{ type: 'A', data: i }], { expectedRevision: 1 })));
    hold.release();
    await blocker;
    const results = await pending;
    expect(counts.writes - before.writes).toBe(1);
    expect(counts.syncs - before.syncs).toBe(1);
    // Positions in the order the appends were made, with no gap.
    expect(results.map((r) => r.position)).toEqual(Array.from({ length: 16 }, (_, i) => 18 + i));
    expect(results.every((r) => r.revision === 2)).toBe(true);
    await store.close();
  });

  it('queued appends are decided in order against the queued head: of two expecting the same revision, the later conflicts', async () => {
    const { fs, holdNextSync } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const stream = randomStream();
    const hold = holdNextSync();
    const blocker = store.append(randomStream('blocker'), [{ type: 'B', data: 0 }], { expectedRevision: 'no_stream' });
    await hold.entered;
    const results = Promise.allSettled([
      store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' }),
      store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 'no_stream' }),
      store.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: 1 }),
      store.append(stream, [{ type: 'A', data: 4 }], { expectedRevision: 2 }),
      store.append(stream, [{ type: 'A', data: 5 }], { expectedRevision: 1 }),
    ]);
    hold.release();
    await blocker;
    const settled = await results;
    expect(settled.map((r) => (r.status === 'fulfilled' ? r.value.revision : r.reason instanceof ConcurrencyError ? 'conflict' : r.reason))).toEqual([
      1,
      'conflict',
      2,
      3,
      'conflict',
    ]);
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([1, 3, 4]);
    await store.close();
  });

  it('a refusal decided against queued appends is answered only once they are durable', async () => {
    const { fs, holdNextSync } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const stream = randomStream();
    const first = holdNextSync();
    const blocker = store.append(randomStream('blocker'), [{ type: 'B', data: 0 }], { expectedRevision: 'no_stream' });
    await first.entered;
    const accepted = watch(store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' }));
    // A read started as soon as the refusal is answered must see what it was refused for.
    const refused = watch(
      store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 'no_stream' }).catch(async (error: unknown) => {
        throw Object.assign(error as Error, { seen: (await store.read(stream)).revision });
      }),
    );
    const second = holdNextSync();
    first.release();
    await blocker;
    // The flush holding both is written; the conflict is decided, but its fdatasync has not returned.
    await second.entered;
    await sleep(30);
    expect(refused.state.settled, 'the refusal waits for the flush it was decided in').toBe(false);
    expect(accepted.state.settled).toBe(false);
    second.release();
    const outcome = await refused.outcome;
    expect('error' in outcome && outcome.error).toBeInstanceOf(ConcurrencyError);
    expect((outcome as { error: { seen: number } }).error.seen).toBe(1);
    expect(await accepted.outcome).toEqual({ value: { revision: 1, position: 2 } });
    await store.close();
  });

  it('after a failed write, the writes it did not fail are decided again in the order they were made', async () => {
    const { fs, holdNextSync, faults } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const stream = randomStream();
    const hold = holdNextSync();
    const blocker = store.append(randomStream('blocker'), [{ type: 'B', data: 0 }], { expectedRevision: 'no_stream' });
    await hold.entered;
    // In one flush: `a` is written; `retry` (a's event id) resolves with a's result; `late` conflicts with `a`.
    const a = watch(store.append(stream, [{ type: 'A', data: 'a', eventId: 'e-1' }], { expectedRevision: 'no_stream' }));
    const retry = watch(store.append(stream, [{ type: 'A', data: 'retry', eventId: 'e-1' }], { expectedRevision: 'no_stream' }));
    const late = watch(store.append(stream, [{ type: 'A', data: 'late' }], { expectedRevision: 'no_stream' }));
    faults.fullDisk = 1;
    hold.release();
    await blocker;
    // The write fails: `a` is refused with it. `retry` and `late` were decided against `a`, which never happened:
    // decided again in order, `retry` (made first) is written and `late` conflicts with it.
    expect(((await a.outcome) as { error?: unknown }).error).toBeInstanceOf(StorageError);
    expect(await retry.outcome).toEqual({ value: { revision: 1, position: 2 } });
    expect(((await late.outcome) as { error?: unknown }).error).toBeInstanceOf(ConcurrencyError);
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual(['retry']);
    await store.close();
  });

  it('readAll never shows a record whose flush is not durable yet, and a later write is not acknowledged before an earlier one', async () => {
    const { fs, holdNextSync } = countingFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const [slow, fast] = [randomStream('slow'), randomStream('fast')];
    await store.append(slow, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    await store.append(fast, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    const hold = holdNextSync();
    const slowAppend = watch(store.append(slow, [{ type: 'S', data: 1 }], { expectedRevision: 1 }));
    await hold.entered;
    const fastAppend = watch(store.append(fast, [{ type: 'F', data: 1 }], { expectedRevision: 1 }));
    await sleep(20);
    expect(fastAppend.state.settled).toBe(false);
    // Position 3 is written but not synced: a reader stops before it, so it cannot skip it later.
    expect((await collect(store.readAll())).map((r) => r.position)).toEqual([1, 2]);
    expect(await collect(store.readAll({ fromPosition: 3 }))).toEqual([]);
    hold.release();
    expect(await slowAppend.outcome).toEqual({ value: { revision: 2, position: 3 } });
    expect(await fastAppend.outcome).toEqual({ value: { revision: 2, position: 4 } });
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

  it('keeps the number of open log descriptors bounded however many streams are written and read', async () => {
    let open = 0;
    let most = 0;
    const logFds = new Set<number>();
    const fs: Partial<FileSystem> = {
      open: async (path, flags, mode) => {
        const fd = await nodeFileSystem.open(path, flags, mode);
        if (SEGMENT.test(path)) {
          logFds.add(fd);
          most = Math.max(most, ++open);
        }
        return fd;
      },
      close: async (fd) => {
        if (logFds.delete(fd)) open--;
        await nodeFileSystem.close(fd);
      },
    };
    const store = await fileStore({ directory: freshDir(), fs });
    const streams = Array.from({ length: 400 }, (_, i) => randomStream(`n${i}`));
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < streams.length; i += 50) {
        await Promise.all(streams.slice(i, i + 50).map((s) => store.append(s, [{ type: 'A', data: round }], { expectedRevision: round })));
      }
    }
    for (const stream of streams) expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([0, 1]);
    // One segment: a descriptor to write it and one to read it.
    expect(most).toBeLessThanOrEqual(2);
    expect((await collect(store.streams())).length).toBe(400);
    await store.close();
    expect(open).toBe(0);
  });

  it('an append accepted before close still completes and is durable', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const store = await fileStore({ directory: dir });
    const appended = store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' }).catch((error: unknown) => error);
    await store.close();
    expect(await appended).toEqual({ revision: 1, position: 1 });
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => e.data)).toEqual([1]);
    await reopened.close();
  });
});

describe('an append that starts a new segment', () => {
  /** A file system that can hold the fsync of the log directory and the fdatasync of segments. */
  function holdingFs(dir: string) {
    const steps: string[] = [];
    const holds = { dir: undefined as ReturnType<typeof newHold> | undefined, data: undefined as ReturnType<typeof newHold> | undefined };
    const logDir = logDirDescriptors(dir);
    const fs: Partial<FileSystem> = {
      open: logDir.open,
      close: logDir.close,
      fsync: async (fd) => {
        if (logDir.isLogDir(fd)) {
          steps.push('log fsync');
          const hold = holds.dir;
          holds.dir = undefined;
          await hold?.enter();
        }
        return nodeFileSystem.fsync(fd);
      },
      fdatasync: async (fd) => {
        steps.push('fdatasync');
        const hold = holds.data;
        holds.data = undefined;
        await hold?.enter();
        return nodeFileSystem.fdatasync(fd);
      },
    };
    return { fs, steps, holds };
  }

  for (const [name, segmentBytes] of [
    ['the first of a new store', undefined],
    ['the next once the active one is full', 1],
  ] as const) {
    it(`(${name}) is acknowledged only once the segment's name and its bytes are durable`, async () => {
      const dir = realpathSync(freshDir());
      const { fs, steps, holds } = holdingFs(dir);
      const store = await fileStore({ directory: dir, fs });
      const stream = randomStream();
      if (segmentBytes !== undefined) await store.append(stream, [{ type: 'E', data: 0 }], { expectedRevision: 'no_stream' });
      const previous = segmentBytes === undefined ? undefined : setSegmentBytesForTests(segmentBytes);
      try {
        const segmentsBefore = segmentsOf(dir).length;
        steps.length = 0;
        const dirHold = newHold();
        const dataHold = newHold();
        holds.dir = dirHold;
        holds.data = dataHold;
        const append = watch(store.append(stream, [{ type: 'E', data: 1 }], { expectedRevision: segmentBytes === undefined ? 'no_stream' : 1 }));
        await dirHold.entered;
        await sleep(20);
        expect(append.state.settled, 'not before the log directory is synced').toBe(false);
        dirHold.release();
        await dataHold.entered;
        await sleep(20);
        expect(append.state.settled, 'not before the segment is synced').toBe(false);
        dataHold.release();
        expect(await append.outcome).toEqual({ value: { revision: segmentBytes === undefined ? 1 : 2, position: segmentBytes === undefined ? 1 : 2 } });
        expect(steps).toEqual(['log fsync', 'fdatasync']);
        expect(segmentsOf(dir).length).toBe(segmentsBefore + 1);
      } finally {
        if (previous !== undefined) setSegmentBytesForTests(previous);
      }
      await store.close();
      const reopened = await fileStore({ directory: dir });
      expect((await eventsOf(reopened, stream)).map((e) => e.data)).toEqual(segmentBytes === undefined ? [1] : [0, 1]);
      await reopened.close();
    });
  }
});
