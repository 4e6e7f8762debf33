import { readFile, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StorageError, type AppendResult, type EventStore, type StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { eventsOf, freshDir, randomStream } from './test-support.fixture.js';

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);
const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });

/** What the journal calls of `twinFs` did, and the faults and hooks to apply to the next ones. */
interface TwinState {
  inlineWrites: number;
  inlineSyncs: number;
  asyncWrites: number;
  asyncSyncs: number;
  /** The next synchronous write lands this many bytes, then fails with ENOSPC (-1: no fault). */
  inlineRoom: number;
  /** The next synchronous fdatasync fails with EIO. */
  failInlineSync: boolean;
  /** Runs once, inside the next synchronous fdatasync, before it syncs or fails. */
  duringInlineSync?: () => void;
  /** Runs once, inside the next asynchronous fdatasync. */
  duringAsyncSync?: () => void;
}

/**
 * A file system with both the asynchronous and the synchronous write and fdatasync, counting which of them
 * journals get and failing the synchronous ones on demand.
 */
function twinFs() {
  const journals = new Set<number>();
  const state: TwinState = { inlineWrites: 0, inlineSyncs: 0, asyncWrites: 0, asyncSyncs: 0, inlineRoom: -1, failInlineSync: false };
  const once = (key: 'duringInlineSync' | 'duringAsyncSync') => {
    const hook = state[key];
    state[key] = undefined;
    hook?.();
  };
  // A new journal may be a blank opened under its own name and renamed into place: its descriptor is the journal's then.
  const writable = new Map<string, number>();
  const fs: Partial<FileSystem> = {
    open: async (path, flags, mode) => {
      const fd = await nodeFileSystem.open(path, flags, mode);
      if (flags !== 'r') writable.set(path, fd);
      if (/streams\/[^/]+\.jsonl$/.test(path) && flags !== 'r') journals.add(fd);
      return fd;
    },
    rename: async (from, to) => {
      await nodeFileSystem.rename(from, to);
      const fd = writable.get(from);
      if (/streams\/[^/]+\.jsonl$/.test(to) && fd !== undefined) journals.add(fd);
    },
    close: async (fd) => {
      journals.delete(fd);
      await nodeFileSystem.close(fd);
    },
    write: async (fd, ...rest) => {
      if (journals.has(fd)) state.asyncWrites++;
      return nodeFileSystem.write(fd, ...rest);
    },
    fdatasync: async (fd) => {
      if (journals.has(fd)) {
        state.asyncSyncs++;
        once('duringAsyncSync');
      }
      return nodeFileSystem.fdatasync(fd);
    },
    writeSync: (fd, buffer, offset, length, position) => {
      if (!journals.has(fd)) return (nodeFileSystem.writeSync as NonNullable<FileSystem['writeSync']>)(fd, buffer, offset, length, position);
      state.inlineWrites++;
      const room = state.inlineRoom;
      if (room < 0) return (nodeFileSystem.writeSync as NonNullable<FileSystem['writeSync']>)(fd, buffer, offset, length, position);
      // The disk fills part-way through the record: `room` bytes land, then ENOSPC (once).
      if (room === 0) {
        state.inlineRoom = -1;
        throw errno('ENOSPC');
      }
      const written = (nodeFileSystem.writeSync as NonNullable<FileSystem['writeSync']>)(fd, buffer, offset, Math.min(room, length), position);
      state.inlineRoom -= written;
      return written;
    },
    fdatasyncSync: (fd) => {
      if (journals.has(fd)) {
        state.inlineSyncs++;
        once('duringInlineSync');
        if (state.failInlineSync) {
          state.failInlineSync = false;
          throw errno('EIO');
        }
      }
      (nodeFileSystem.fdatasyncSync as NonNullable<FileSystem['fdatasyncSync']>)(fd);
    },
  };
  return { fs, state };
}

/** A store over `twinFs` with one event already in `stream`, so its journal exists and is open. */
async function storeWithJournal(dir = freshDir()) {
  const { fs, state } = twinFs();
  const store = await fileStore({ directory: dir, fs });
  const stream = randomStream();
  await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
  Object.assign(state, { inlineWrites: 0, inlineSyncs: 0, asyncWrites: 0, asyncSyncs: 0 });
  return { dir, store, stream, state };
}

const appendOne = (store: EventStore, stream: StreamId, data: number): Promise<AppendResult> =>
  store.append(stream, [{ type: 'A', data }], { expectedRevision: 'any' });

describe('a lone append', () => {
  it('is written and fdatasynced with the synchronous calls, once each', async () => {
    const { store, stream, state } = await storeWithJournal();
    const result = await store.append(
      stream,
      [
        { type: 'A', data: 1 },
        { type: 'B', data: 2 },
      ],
      { expectedRevision: 1 },
    );
    expect(result.revision).toBe(3);
    expect(state).toMatchObject({ inlineWrites: 1, inlineSyncs: 1, asyncWrites: 0, asyncSyncs: 0 });
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([0, 1, 2]);
    await store.close();
  });

  it('to a journal not yet created, on a file system without a synchronous open, waits asynchronously (its directory entry is fsynced too)', async () => {
    const { store, state } = await storeWithJournal();
    await store.append(randomStream('new'), [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    expect(state).toMatchObject({ inlineSyncs: 0, asyncSyncs: 1 });
    await store.close();
  });

  it('while another stream is flushing waits asynchronously, so the two fdatasyncs overlap', async () => {
    const { store, stream, state } = await storeWithJournal();
    const other = randomStream('other');
    await store.append(other, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    Object.assign(state, { inlineSyncs: 0, asyncSyncs: 0 });
    await Promise.all([appendOne(store, stream, 1), appendOne(store, other, 1)]);
    expect(state).toMatchObject({ inlineSyncs: 0, asyncSyncs: 2 });
    await store.close();
  });

  it('made while an inline flush runs joins the next flush, in order, with its own result', async () => {
    const { dir, store, stream, state } = await storeWithJournal();
    const during: Promise<AppendResult>[] = [];
    state.duringInlineSync = () => {
      during.push(appendOne(store, stream, 2), appendOne(store, stream, 3));
    };
    const first = await appendOne(store, stream, 1);
    const later = await Promise.all(during);
    expect(first.revision).toBe(2);
    expect(later.map((r) => r.revision)).toEqual([3, 4]);
    expect(later[1]!.position).toBe(later[0]!.position + 1);
    expect(state.inlineWrites + state.asyncWrites, 'the two made meanwhile share one flush').toBe(2);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => [e.revision, e.data])).toEqual([
      [1, 0],
      [2, 1],
      [3, 2],
      [4, 3],
    ]);
    await reopened.close();
  });
});

describe('an inline flush that fails', () => {
  it('on fdatasync rejects as poisoned, with every append queued behind it, and refuses later writes', async () => {
    const { dir, store, stream, state } = await storeWithJournal();
    let behind: Promise<AppendResult> | undefined;
    state.failInlineSync = true;
    state.duringInlineSync = () => {
      behind = appendOne(store, stream, 2);
    };
    const failed = await appendOne(store, stream, 1).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).poisoned).toBe(true);
    expect(((failed as StorageError).cause as { code?: string }).code).toBe('EIO');
    await expect(behind).rejects.toBeInstanceOf(StorageError);
    await expect(appendOne(store, stream, 3)).rejects.toMatchObject({ code: 'storage_error', poisoned: true });
    expect((await store.read(stream)).revision).toBe(1);
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([0]);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    const revision = (await reopened.read(stream)).revision;
    expect((await reopened.append(stream, [{ type: 'B', data: 4 }], { expectedRevision: revision })).revision).toBe(revision + 1);
    await reopened.close();
  });

  it('on a full disk part-way rejects without poisoning, cuts the half record back, and the next append lands on a clean line', async () => {
    const { dir, store, stream, state } = await storeWithJournal();
    const before = (await readFile(journalOf(dir, stream))).length;
    state.inlineRoom = 40;
    const failed = await appendOne(store, stream, 1).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).poisoned).toBe(false);
    expect(((failed as StorageError).cause as { code?: string }).code).toBe('ENOSPC');
    expect((failed as StorageError).message).toBe(`Could not write to ${journalOf(dir, stream)}: the disk is full (ENOSPC).`);
    expect(state.inlineSyncs, 'nothing is fdatasynced after a failed write').toBe(0);
    expect((await readFile(journalOf(dir, stream))).length, 'the half record is cut back').toBe(before);
    expect((await store.append(stream, [{ type: 'B', data: 2 }], { expectedRevision: 1 })).revision).toBe(2);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => [e.revision, e.type, e.data])).toEqual([
      [1, 'A', 0],
      [2, 'B', 2],
    ]);
    await reopened.close();
  });
});

describe('a flush of several appends', () => {
  it('waits asynchronously while appends arrive during such waits, and runs inline once none did', async () => {
    const { fs, state } = twinFs();
    const store = await fileStore({ directory: freshDir(), fs });
    const stream = randomStream();
    const pair = (data: number) => Promise.all([appendOne(store, stream, data), appendOne(store, stream, data + 1)]);
    // An append arrives while the journal's first flush waits on the disk: that wait was worth making.
    let arrived: Promise<unknown> | undefined;
    state.duringAsyncSync = () => {
      arrived = appendOne(store, stream, 1);
    };
    await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    await arrived;
    expect(state, 'a lone append runs inline regardless').toMatchObject({ asyncSyncs: 1, inlineSyncs: 1 });
    await pair(2);
    expect(state).toMatchObject({ asyncSyncs: 2, inlineSyncs: 1 });
    // Nothing arrived during that wait: the next pairs run inline.
    await pair(4);
    await pair(6);
    expect(state).toMatchObject({ asyncSyncs: 2, inlineSyncs: 3 });
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await store.close();
  });
});

/**
 * The node file system with every journal and directory call recorded in order (`open`, `openSync`,
 * `fdatasync`, `fdatasyncSync`, `fsync`, each with the path's last name), to see which calls a
 * journal's creation takes.
 */
function recordingFs() {
  const calls: string[] = [];
  const names = new Map<number, string>();
  const nameOf = (path: string) => path.split('/').at(-1) as string;
  const syncFs = nodeFileSystem as Required<FileSystem>;
  // A descriptor open on a file that is renamed (a blank becoming a journal) goes by the new name.
  const renamed = (from: string, to: string) => {
    for (const [fd, name] of names) if (name === nameOf(from)) names.set(fd, nameOf(to));
  };
  const fs: Partial<FileSystem> = {
    open: async (path, flags, mode) => {
      const fd = await nodeFileSystem.open(path, flags, mode);
      names.set(fd, nameOf(path));
      calls.push(`open ${nameOf(path)}`);
      return fd;
    },
    openSync: (path, flags, mode) => {
      const fd = syncFs.openSync(path, flags, mode);
      names.set(fd, nameOf(path));
      calls.push(`openSync ${nameOf(path)}`);
      return fd;
    },
    fdatasync: async (fd) => {
      calls.push(`fdatasync ${names.get(fd)}`);
      await nodeFileSystem.fdatasync(fd);
    },
    fdatasyncSync: (fd) => {
      calls.push(`fdatasyncSync ${names.get(fd)}`);
      syncFs.fdatasyncSync(fd);
    },
    fsync: async (fd) => {
      calls.push(`fsync ${names.get(fd)}`);
      await nodeFileSystem.fsync(fd);
    },
    rename: async (from, to) => {
      calls.push(`rename ${nameOf(to)}`);
      await nodeFileSystem.rename(from, to);
      renamed(from, to);
    },
    renameSync: (from, to) => {
      calls.push(`renameSync ${nameOf(to)}`);
      syncFs.renameSync(from, to);
      renamed(from, to);
    },
  };
  return { fs, calls, names };
}

/** `recordingFs` that cannot make blank journals (their directory refuses new files), so journals are created. */
function recordingFsWithoutBlanks() {
  const recording = recordingFs();
  const open = recording.fs.open as NonNullable<FileSystem['open']>;
  recording.fs.open = async (path, flags, mode) => {
    if (/\/blanks\/blank-/.test(path) && flags !== 'r') throw errno('EACCES');
    return open(path, flags, mode);
  };
  return recording;
}

describe('a lone append to a journal not yet created', () => {
  it('takes a blank journal when one is ready: renamed into place and written with the synchronous calls, it waits on its fdatasync alone', async () => {
    const dir = freshDir();
    const { fs, calls } = recordingFs();
    // Reopened, the store has the blanks the first open made ready at once.
    await (await fileStore({ directory: dir, fs })).close();
    const store = await fileStore({ directory: dir, fs });
    calls.length = 0;
    const stream = randomStream('new');
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const journal = `${stream}.jsonl`;
    expect(calls).toEqual([`renameSync ${journal}`, `fdatasyncSync ${journal}`]);
    expect((await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 })).revision).toBe(2);
    await store.close();
    expect(calls, 'the new name is made durable by close').toContain('fsync streams');
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => e.data)).toEqual([1, 2]);
    await reopened.close();
  });

  it('without a blank creates and writes it with the synchronous calls, then waits on its fdatasync and its directory fsync together', async () => {
    const dir = freshDir();
    const { fs, calls } = recordingFsWithoutBlanks();
    const store = await fileStore({ directory: dir, fs });
    await store.append(randomStream('first'), [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    calls.length = 0;
    const stream = randomStream('new');
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const journal = `${stream}.jsonl`;
    expect(calls).toEqual([`openSync ${journal}`, 'openSync streams', `fdatasync ${journal}`, 'fsync streams']);
    expect((await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 })).revision).toBe(2);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => e.data)).toEqual([1, 2]);
    await reopened.close();
  });

  it('whose streams directory is missing, with a blank ready, gives the blank back and makes the directory', async () => {
    const dir = freshDir();
    const { fs, calls } = recordingFs();
    await (await fileStore({ directory: dir, fs })).close();
    const store = await fileStore({ directory: dir, fs });
    await rmdir(join(dir, 'streams'));
    const stream = randomStream('first');
    await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    expect(calls).toContain(`open ${stream}.jsonl`);
    const other = randomStream('second');
    calls.length = 0;
    await store.append(other, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    expect(calls, 'the blank given back is used by the next new journal').toEqual([`renameSync ${other}.jsonl`, `fdatasyncSync ${other}.jsonl`]);
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => e.data)).toEqual([0]);
    expect((await eventsOf(reopened, other)).map((e) => e.data)).toEqual([1]);
    await reopened.close();
  });

  it('whose streams directory is missing takes the asynchronous calls, which make the directory', async () => {
    const dir = freshDir();
    const { fs, calls } = recordingFsWithoutBlanks();
    const store = await fileStore({ directory: dir, fs });
    await rmdir(join(dir, 'streams'));
    const stream = randomStream('first');
    await store.append(stream, [{ type: 'A', data: 0 }], { expectedRevision: 'no_stream' });
    expect(calls.filter((call) => call.includes(stream))).toEqual([`open ${stream}.jsonl`, `fdatasync ${stream}.jsonl`]);
    expect(calls).toContain('fsync streams');
    await store.close();
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((e) => e.data)).toEqual([0]);
    await reopened.close();
  });
});
