import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StorageError, type StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { eventsOf, freshDir, randomStream } from './test-support.fixture.js';

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);
const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });

/** A file system whose journal writes and syncs can be made to fail on demand. */
function faultyFs(stream: StreamId) {
  const state = { fullDiskAfter: -1, failTruncates: 0, failSyncs: 0, writes: 0, truncates: [] as number[] };
  const journalFds = new Set<number>();
  // A new journal may be a blank opened under its own name and renamed into place: its descriptor is the journal's then.
  const writableFds = new Map<string, number>();
  const fs: Partial<FileSystem> = {
    open: async (path, flags, mode) => {
      const fd = await nodeFileSystem.open(path, flags, mode);
      if (flags !== 'r') writableFds.set(path, fd);
      if (path.endsWith(`${stream}.jsonl`) && flags !== 'r') journalFds.add(fd);
      return fd;
    },
    rename: async (from, to) => {
      await nodeFileSystem.rename(from, to);
      const fd = writableFds.get(from);
      if (fd !== undefined && to.endsWith(`${stream}.jsonl`)) journalFds.add(fd);
    },
    close: async (fd) => {
      journalFds.delete(fd);
      await nodeFileSystem.close(fd);
    },
    write: async (fd, buffer, offset, length, position) => {
      if (!journalFds.has(fd)) return nodeFileSystem.write(fd, buffer, offset, length, position);
      state.writes++;
      if (state.fullDiskAfter >= 0) {
        // The disk fills part-way through the record: `room` bytes land, then ENOSPC (once).
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
      if (journalFds.has(fd)) {
        state.truncates.push(length);
        if (state.failTruncates > 0) {
          state.failTruncates--;
          throw errno('EIO');
        }
      }
      return nodeFileSystem.ftruncate(fd, length);
    },
    fdatasync: async (fd) => {
      if (journalFds.has(fd) && state.failSyncs > 0) {
        state.failSyncs--;
        throw errno('EIO');
      }
      return nodeFileSystem.fdatasync(fd);
    },
  };
  return { fs, state };
}

/** Makes the next journal write land `room` bytes and then fail with ENOSPC. */
function fillDiskAfter(state: { fullDiskAfter: number }, room: number): void {
  state.fullDiskAfter = room;
}

describe('a full disk part-way through a record', () => {
  it('rejects the append, cuts the half record back, and the next append lands on a clean line', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const { fs, state } = faultyFs(stream);
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 });
    const before = (await readFile(journalOf(dir, stream))).length;
    fillDiskAfter(state, 40);
    const failed = await store.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: 2 }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).poisoned).toBe(false);
    expect(((failed as StorageError).cause as { code?: string }).code).toBe('ENOSPC');
    expect((failed as StorageError).message).toBe(`Could not write to ${journalOf(dir, stream)}: the disk is full (ENOSPC).`);
    expect((await readFile(journalOf(dir, stream))).length, 'the half record is cut back').toBe(before);
    // The store still accepts writes: the failed batch is simply not there.
    const next = await store.append(stream, [{ type: 'B', data: 4 }], { expectedRevision: 2 });
    expect(next.revision).toBe(3);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => [e.revision, e.type, e.data])).toEqual([
      [1, 'A', 1],
      [2, 'A', 2],
      [3, 'B', 4],
    ]);
    await reopened.close();
  });

  it('when cutting back fails too, the next flush truncates before it writes', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const { fs, state } = faultyFs(stream);
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const before = (await readFile(journalOf(dir, stream))).length;
    fillDiskAfter(state, 25);
    state.failTruncates = 1;
    await expect(store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 })).rejects.toBeInstanceOf(StorageError);
    expect((await readFile(journalOf(dir, stream))).length, 'half a record is still on disk').toBe(before + 25);
    await store.append(stream, [{ type: 'B', data: 3 }], { expectedRevision: 1 });
    expect(state.truncates).toEqual([before, before]);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => [e.revision, e.type])).toEqual([
      [1, 'A'],
      [2, 'B'],
    ]);
    await reopened.close();
  });

  it('fails every append queued in the same flush and behind it, and none of them is readable', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const { fs, state } = faultyFs(stream);
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    fillDiskAfter(state, 10);
    const results = await Promise.allSettled([1, 2, 3].map((n) => store.append(stream, [{ type: 'A', data: n }], { expectedRevision: 'any' })));
    expect(results.every((r) => r.status === 'rejected')).toBe(true);
    expect((await store.read(stream)).revision).toBe(1);
    expect((await store.append(stream, [{ type: 'A', data: 9 }], { expectedRevision: 1 })).revision).toBe(2);
    await store.close();
  });
});

describe('a full disk while compacting', () => {
  it('rejects the compaction and leaves the stream as it was, and a later compaction succeeds', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const snapshotFds = new Set<number>();
    let full = true;
    const store = await fileStore({
      directory: dir,
      fs: {
        open: async (path, flags, mode) => {
          const fd = await nodeFileSystem.open(path, flags, mode);
          if (path.includes('.snapshot.json.') && flags === 'wx') snapshotFds.add(fd);
          return fd;
        },
        write: async (fd, buffer, offset, length, position) => {
          if (snapshotFds.has(fd) && full) throw errno('ENOSPC');
          return nodeFileSystem.write(fd, buffer, offset, length, position);
        },
      },
    });
    await store.append(
      stream,
      [1, 2, 3].map((n) => ({ type: 'N', data: n })),
      { expectedRevision: 'no_stream' },
    );
    const snapshot = { revision: 2, state: { sum: 3 }, identity: { stream, schemaVersion: 1 } };
    await expect(store.compact(stream, snapshot)).rejects.toMatchObject({ code: 'storage_error', poisoned: false });
    const read = await store.read(stream);
    expect(read.snapshot).toBeUndefined();
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([1, 2, 3]);
    full = false;
    await store.compact(stream, snapshot);
    expect((await store.read(stream)).snapshot?.state).toEqual({ sum: 3 });
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([3]);
    await store.close();
    const names = await readdir(join(dir, 'streams'));
    expect(
      names.filter((name) => name.endsWith('.tmp')),
      'no temporary file is left behind',
    ).toEqual([]);
  });
});

describe('a new journal', () => {
  it('created without a blank, whose first write failed, still has its directory entry fsynced by the next successful flush', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const { fs, state } = faultyFs(stream);
    const directoryFds = new Set<number>();
    let directorySyncs = 0;
    const store = await fileStore({
      directory: dir,
      fs: {
        ...fs,
        open: async (path, flags, mode) => {
          // No blank journals (their directory refuses new files): the journal is created, and its name needs the fsync.
          if (/\/blanks\/blank-/.test(path) && flags !== 'r') throw errno('EACCES');
          const fd = await (fs.open as NonNullable<typeof fs.open>)(path, flags, mode);
          if (path === join(dir, 'streams')) directoryFds.add(fd);
          return fd;
        },
        fsync: async (fd) => {
          if (directoryFds.has(fd)) directorySyncs++;
          return nodeFileSystem.fsync(fd);
        },
      },
    });
    fillDiskAfter(state, 0);
    await expect(store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(StorageError);
    const before = directorySyncs;
    await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 'no_stream' });
    expect(directorySyncs - before).toBe(1);
    await store.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: 1 });
    expect(directorySyncs - before, 'only once').toBe(1);
    await store.close();
  });
});

describe('a failed fdatasync', () => {
  it('rejects the append and poisons the store until it is reopened', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const { fs, state } = faultyFs(stream);
    const store = await fileStore({ directory: dir, fs });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    state.failSyncs = 1;
    const failed = await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).poisoned).toBe(true);
    expect(((failed as StorageError).cause as { code?: string }).code).toBe('EIO');
    // A later fsync would succeed, which proves nothing: every write is refused.
    const other = randomStream('other');
    for (const attempt of [
      () => store.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: 1 }),
      () => store.append(other, [{ type: 'A', data: 3 }], { expectedRevision: 'any' }),
      () => store.compact(stream, { revision: 1, state: null, identity: { stream, schemaVersion: 1 } }),
      () => store.deleteStream(stream, { expectedRevision: 'any' }),
      () => store.putBlob(stream, new Uint8Array([1])),
      () => store.restoreStream(other, { revision: 1, state: null, identity: { stream: other, schemaVersion: 1 } }),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ code: 'storage_error', poisoned: true });
    }
    // What was never acknowledged is not read back from this store.
    expect((await store.read(stream)).revision).toBe(1);
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([1]);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    const revision = (await reopened.read(stream)).revision;
    expect((await reopened.append(stream, [{ type: 'B', data: 4 }], { expectedRevision: revision })).revision).toBe(revision + 1);
    await reopened.close();
  });
});
