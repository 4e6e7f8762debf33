import { readdirSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { eventsOf, freshDir, logDirDescriptors, logLines, randomStream, segmentsOf } from './test-support.fixture.js';

const SEGMENT = /\/log\/\d{20}\.jsonl$/;
const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fresh store directory with its links resolved, as the store names its files. */
const realDir = () => realpathSync(freshDir());
/** The active segment of the store in `dir` and its size. */
const active = (dir: string) => segmentsOf(dir).at(-1) as string;
const sizeOf = (path: string) => statSync(path).size;

/**
 * A file system whose segment writes, cut-backs, fdatasyncs and reads can be made to fail on demand; a segment
 * fdatasync can also be held until released.
 */
function faultyFs() {
  const state = {
    /** Bytes the next segment write lands before ENOSPC (-1: no fault). */
    fullDiskAfter: -1,
    failTruncates: 0,
    failSyncs: 0,
    failReads: false,
    writes: 0,
    truncates: [] as number[],
    held: undefined as Promise<void> | undefined,
    syncing: false,
  };
  const writable = new Set<number>();
  const readable = new Set<number>();
  const fs: Partial<FileSystem> = {
    open: async (path, flags, mode) => {
      const fd = await nodeFileSystem.open(path, flags, mode);
      if (SEGMENT.test(path)) (flags === 'r' ? readable : writable).add(fd);
      return fd;
    },
    close: async (fd) => {
      writable.delete(fd);
      readable.delete(fd);
      await nodeFileSystem.close(fd);
    },
    write: async (fd, buffer, offset, length, position) => {
      if (!writable.has(fd)) return nodeFileSystem.write(fd, buffer, offset, length, position);
      state.writes++;
      if (state.fullDiskAfter >= 0) {
        // The disk fills part-way through the flush: `room` bytes land, then ENOSPC (once).
        const room = state.fullDiskAfter;
        if (room === 0) {
          state.fullDiskAfter = -1;
          throw errno('ENOSPC');
        }
        const written = await nodeFileSystem.write(fd, buffer, offset, Math.min(room, length), position);
        state.fullDiskAfter -= written;
        return written;
      }
      return nodeFileSystem.write(fd, buffer, offset, length, position);
    },
    ftruncate: async (fd, length) => {
      if (writable.has(fd)) {
        state.truncates.push(length);
        if (state.failTruncates > 0) {
          state.failTruncates--;
          throw errno('EIO');
        }
      }
      return nodeFileSystem.ftruncate(fd, length);
    },
    fdatasync: async (fd) => {
      if (writable.has(fd)) {
        state.syncing = true;
        await state.held;
        if (state.failSyncs > 0) {
          state.failSyncs--;
          throw errno('EIO');
        }
      }
      return nodeFileSystem.fdatasync(fd);
    },
    read: async (fd, buffer, offset, length, position) => {
      if (state.failReads && readable.has(fd)) throw errno('EIO');
      return nodeFileSystem.read(fd, buffer, offset, length, position);
    },
  };
  return { fs, state };
}

/** Every line of the log parses and is whole: nothing half-written is left between them. */
function expectCleanLines(dir: string): void {
  const lines = logLines(dir);
  const bytes = lines.reduce((sum, line) => sum + line.bytes.length, 0);
  expect(bytes, 'the segments hold only whole lines').toBe(segmentsOf(dir).reduce((sum, path) => sum + sizeOf(path), 0));
}

describe('a full disk part-way through a write', () => {
  it('rejects the append naming the segment, cuts the half line back, and the next append lands on a clean line', async () => {
    const dir = realDir();
    const stream = randomStream();
    const { fs, state } = faultyFs();
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 });
    const segment = active(dir);
    const before = sizeOf(segment);
    state.fullDiskAfter = 40;
    const failed = await store.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: 2 }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).poisoned).toBe(false);
    expect(((failed as StorageError).cause as { code?: string }).code).toBe('ENOSPC');
    expect((failed as StorageError).message).toBe(`Could not write to ${segment}: the disk is full (ENOSPC).`);
    expect(sizeOf(segment), 'the half line is cut back').toBe(before);
    expect((await store.read(stream)).revision).toBe(2);
    // The store still accepts writes: the failed append is simply not there.
    const next = await store.append(stream, [{ type: 'B', data: 4 }], { expectedRevision: 2 });
    expect(next).toEqual({ revision: 3, position: 3 });
    expectCleanLines(dir);
    expect(logLines(dir).map((line) => line.payload.data)).toEqual([1, 2, 4]);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => [e.revision, e.type, e.data])).toEqual([
      [1, 'A', 1],
      [2, 'A', 2],
      [3, 'B', 4],
    ]);
    await reopened.close();
  });

  it('fails every append of the flush it hit, none of them readable; appends after it go ahead', async () => {
    const dir = realDir();
    const stream = randomStream();
    const { fs, state } = faultyFs();
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    // Three appends queued behind a held flush share the next one, which the disk fills part-way through.
    let release!: () => void;
    state.held = new Promise<void>((resolve) => (release = resolve));
    state.syncing = false;
    const blocker = store.append(randomStream('blocker'), [{ type: 'B', data: 0 }], { expectedRevision: 'no_stream' });
    while (!state.syncing) await sleep(1);
    const results = Promise.allSettled([1, 2, 3].map((n) => store.append(stream, [{ type: 'A', data: n }], { expectedRevision: 'any' })));
    state.held = undefined;
    state.fullDiskAfter = 10;
    release();
    await blocker;
    const settled = await results;
    expect(settled.map((r) => (r.status === 'rejected' && r.reason instanceof StorageError && !r.reason.poisoned ? 'full' : r.status))).toEqual([
      'full',
      'full',
      'full',
    ]);
    expect((await store.read(stream)).revision).toBe(1);
    expect((await store.append(stream, [{ type: 'A', data: 9 }], { expectedRevision: 1 })).revision).toBe(2);
    expectCleanLines(dir);
    await store.close();
  });

  it('when cutting back fails too, the store refuses writes; reopened, the half line is cut and nothing acknowledged is lost', async () => {
    const dir = realDir();
    const stream = randomStream();
    const { fs, state } = faultyFs();
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const segment = active(dir);
    const before = sizeOf(segment);
    state.fullDiskAfter = 25;
    state.failTruncates = 1;
    const failed = await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).poisoned).toBe(true);
    expect((failed as StorageError).message).toContain(`Could not write to ${segment}: the disk is full (ENOSPC)`);
    expect(sizeOf(segment), 'half a line is still on disk').toBe(before + 25);
    await expect(store.append(stream, [{ type: 'B', data: 3 }], { expectedRevision: 1 })).rejects.toMatchObject({ code: 'storage_error', poisoned: true });
    expect((await store.read(stream)).revision).toBe(1);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect(sizeOf(segment), 'the writer cut the torn tail').toBe(before);
    expect((await reopened.append(stream, [{ type: 'B', data: 3 }], { expectedRevision: 1 })).revision).toBe(2);
    expect((await eventsOf(reopened, stream)).map((e) => [e.revision, e.type])).toEqual([
      [1, 'A'],
      [2, 'B'],
    ]);
    expectCleanLines(dir);
    await reopened.close();
  });

  it('the first write of a new segment failing leaves the segment usable: the next append lands at its start', async () => {
    const dir = realDir();
    const stream = randomStream();
    const { fs, state } = faultyFs();
    const store = await fileStore({ directory: dir, fs });
    state.fullDiskAfter = 0;
    await expect(store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' })).rejects.toMatchObject({
      code: 'storage_error',
      poisoned: false,
    });
    expect(await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 'no_stream' })).toEqual({ revision: 1, position: 1 });
    expect(segmentsOf(dir)).toHaveLength(1);
    expect(logLines(dir).map((line) => [line.line, line.offset, line.payload.data])).toEqual([[1, 0, 2]]);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => e.data)).toEqual([2]);
    await reopened.close();
  });
});

describe('a full disk while compacting', () => {
  it('rejects the compaction and leaves the stream as it was, and a later compaction succeeds', async () => {
    const dir = realDir();
    const stream = randomStream();
    const { fs, state } = faultyFs();
    const store = await fileStore({ directory: dir, fs });
    await store.append(
      stream,
      [1, 2, 3].map((n) => ({ type: 'N', data: n })),
      { expectedRevision: 'no_stream' },
    );
    const snapshot = { revision: 2, state: { sum: 3 }, identity: { stream, schemaVersion: 1 } };
    state.fullDiskAfter = 30;
    const failed = await store.compact(stream, snapshot).catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: 'storage_error', poisoned: false });
    expect((failed as StorageError).message).toBe(`Could not write to ${active(dir)}: the disk is full (ENOSPC).`);
    expect((await store.read(stream)).snapshot).toBeUndefined();
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([1, 2, 3]);
    await store.compact(stream, snapshot);
    expect((await store.read(stream)).snapshot?.state).toEqual({ sum: 3 });
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([3]);
    await store.close();
    expectCleanLines(dir);
    expect(
      readdirSync(join(dir, 'log')).filter((name) => !/^\d{20}\.jsonl$/.test(name)),
      'nothing but segments is left in the log directory',
    ).toEqual([]);
    const reopened = await fileStore({ directory: dir });
    expect((await reopened.read(stream)).snapshot?.revision).toBe(2);
    await reopened.close();
  });
});

describe('a failed fdatasync', () => {
  it('rejects that append and every write queued behind it, and poisons the store until it is reopened', async () => {
    const dir = realDir();
    const stream = randomStream();
    const { fs, state } = faultyFs();
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    let release!: () => void;
    state.held = new Promise<void>((resolve) => (release = resolve));
    state.syncing = false;
    state.failSyncs = 1;
    const failing = store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 }).catch((e: unknown) => e);
    while (!state.syncing) await sleep(1);
    const other = randomStream('other');
    // Queued while the failing fdatasync is under way: they may not be written after it.
    const queued = Promise.allSettled([
      store.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: 'any' }),
      store.append(other, [{ type: 'O', data: 1 }], { expectedRevision: 'no_stream' }),
      store.deleteStream(stream, { expectedRevision: 'any' }),
    ]);
    state.held = undefined;
    release();
    const failed = await failing;
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).poisoned).toBe(true);
    expect(((failed as StorageError).cause as { code?: string }).code).toBe('EIO');
    for (const result of await queued) expect(result).toMatchObject({ status: 'rejected', reason: { code: 'storage_error', poisoned: true } });
    // A later fdatasync would succeed, which proves nothing: every write is refused.
    for (const attempt of [
      () => store.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: 1 }),
      () => store.append(other, [{ type: 'A', data: 3 }], { expectedRevision: 'any' }),
      () => store.compact(stream, { revision: 1, state: null, identity: { stream, schemaVersion: 1 } }),
      () => store.deleteStream(stream, { expectedRevision: 'any' }),
      () => store.putBlob(stream, new Uint8Array([1])),
      () => store.restoreStream(other, { revision: 1, state: null, identity: { stream: other, schemaVersion: 1 } }),
    ]) {
      const error = await attempt().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'storage_error', poisoned: true });
      expect((error as StorageError).message).toContain('refuses writes until it is reopened');
    }
    expect((await store.status()).details?.writesRefused).toEqual(expect.any(String));
    // What was never acknowledged is not read back from this store.
    expect((await store.read(stream)).revision).toBe(1);
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([1]);
    expect((await store.read(other)).revision).toBe(0);
    await store.close();
    // Reopened: everything acknowledged is there (the unsynced line may or may not have survived).
    const reopened = await fileStore({ directory: dir });
    const events = (await eventsOf(reopened, stream)).map((e) => e.data);
    expect(events[0]).toBe(1);
    expect([[1], [1, 2]]).toContainEqual(events);
    expect((await reopened.read(other)).revision).toBe(0);
    expect((await reopened.append(stream, [{ type: 'B', data: 4 }], { expectedRevision: events.length })).revision).toBe(events.length + 1);
    await reopened.close();
  });

  it('a failed fsync of the log directory while starting a segment rejects the append; the store then goes on in that segment or refuses writes, naming why', async () => {
    const dir = realDir();
    const stream = randomStream();
    const logDir = logDirDescriptors(dir);
    let failDirSyncs = 1;
    let dirSyncs = 0;
    const store = await fileStore({
      directory: dir,
      fs: {
        open: logDir.open,
        close: logDir.close,
        fsync: async (fd) => {
          if (logDir.isLogDir(fd)) dirSyncs++;
          if (logDir.isLogDir(fd) && failDirSyncs > 0) {
            failDirSyncs--;
            throw errno('EIO');
          }
          return nodeFileSystem.fsync(fd);
        },
      },
    });
    await expect(store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(StorageError);
    // Then either the store goes on in that segment (its name synced by a later attempt), or it refuses every
    // write until it is reopened and says so; never a write refused for a reason of its own that nothing clears.
    const later = await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 'no_stream' }).catch((e: unknown) => e);
    if (later instanceof Error) {
      expect(later).toMatchObject({ code: 'storage_error', poisoned: true });
      expect(later.message).toContain('refuses writes until it is reopened');
      expect((await store.status()).details?.writesRefused).toEqual(expect.any(String));
    } else {
      expect(later).toEqual({ revision: 1, position: 1 });
      expect(dirSyncs, 'the segment name was synced again before the append was acknowledged').toBeGreaterThan(1);
    }
    await store.close();
    const reopened = await fileStore({ directory: dir });
    const revision = (await reopened.read(stream)).revision;
    expect((await reopened.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: revision })).revision).toBe(revision + 1);
    await reopened.close();
  });
});

describe('EIO while reading a segment', () => {
  it('fails that read with a StorageError naming the segment, without poisoning the store; the read works once the disk does', async () => {
    const dir = realDir();
    const stream = randomStream();
    const { fs, state } = faultyFs();
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    state.failReads = true;
    const failed = await eventsOf(store, stream).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect(failed).not.toBeInstanceOf(CorruptionError);
    expect((failed as StorageError).message).toContain(active(dir));
    expect((failed as StorageError).poisoned).toBe(false);
    state.failReads = false;
    expect((await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 })).revision).toBe(2);
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([1, 2]);
    await store.close();
  });

  it('fails a read-only view’s open with a StorageError naming the segment', async () => {
    const dir = realDir();
    const writer = await fileStore({ directory: dir });
    await writer.append(randomStream(), [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await writer.close();
    const { fs, state } = faultyFs();
    state.failReads = true;
    const failed = await fileStore({ directory: dir, readOnly: true, fs }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect(failed).not.toBeInstanceOf(CorruptionError);
    expect((failed as StorageError).message).toContain(active(dir));
  });
});
