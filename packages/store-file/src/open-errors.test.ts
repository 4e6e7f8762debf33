import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError, StoreLockedError } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { freshDir, openFailure, randomStream } from './test-support.fixture.js';

/** A native permission error as node raises it. */
const denied = (syscall: string, path: string) =>
  Object.assign(new Error(`EACCES: permission denied, ${syscall} '${path}'`), { code: 'EACCES', syscall, path });

/** Tests run as root, where chmod denies nothing: the `fs` option refuses every write under `dir` instead. */
function readOnlyFileSystem(dir: string): Partial<FileSystem> {
  return {
    open: async (path, flags, mode) => {
      if (flags !== 'r' && path.startsWith(dir)) throw denied('open', path);
      return nodeFileSystem.open(path, flags, mode);
    },
    mkdir: async (path, mode) => {
      if (path.startsWith(dir)) {
        const exists = await nodeFileSystem.lstat(path).then(
          () => true,
          () => false,
        );
        if (!exists) throw denied('mkdir', path);
      }
      return nodeFileSystem.mkdir(path, mode);
    },
  };
}

describe('opening a store reports what is wrong and where', () => {
  it('a directory the store may not write is a StorageError naming it, with the native error as cause', async () => {
    const dir = freshDir();
    const error = await openFailure({ directory: dir, fs: readOnlyFileSystem(dir) });
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toContain(dir);
    expect((error as Error).cause).toMatchObject({ code: 'EACCES' });
  });

  it('a store directory the store may not create inside of is a StorageError naming it', async () => {
    const dir = join(freshDir(), 'store');
    const error = await openFailure({ directory: dir, fs: readOnlyFileSystem(dir) });
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toContain(dir);
    expect((error as Error).cause).toMatchObject({ code: 'EACCES' });
  });

  it('a subdirectory the store may not create is a StorageError naming it', async () => {
    const dir = freshDir();
    const streams = join(dir, 'streams');
    const error = await openFailure({
      directory: dir,
      fs: { mkdir: async (path, mode) => (path === streams ? Promise.reject(denied('mkdir', path)) : nodeFileSystem.mkdir(path, mode)) },
    });
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toContain(streams);
    expect((error as Error).cause).toMatchObject({ code: 'EACCES' });
  });

  it.each([
    ['empty', ''],
    ['not JSON', 'not a lock\n'],
    ['JSON without a pid', '{"token":"abc"}\n'],
  ])('a LOCK that is %s is reported as unreadable, with how to recover, never as held by another process', async (_, content) => {
    const dir = freshDir();
    await (await fileStore({ directory: dir })).close();
    await writeFile(join(dir, 'LOCK'), content);
    const error = await openFailure({ directory: dir });
    expect(error).not.toBeInstanceOf(StoreLockedError);
    expect(error).toBeInstanceOf(CorruptionError);
    expect(error).toMatchObject({ file: join(dir, 'LOCK') });
    expect((error as Error).message).not.toContain('held by');
    expect((error as Error).message).toContain('remove it');
  });

  it.each([
    ['a journal', (dir: string, s: string) => join(dir, 'streams', `${s}.jsonl`)],
    ['a snapshot', (dir: string, s: string) => join(dir, 'streams', `${s}.snapshot.json`)],
    ['an owners file', (dir: string, s: string) => join(dir, 'owners', `${s}.jsonl`)],
    ['the tombstones file', (dir: string) => join(dir, 'tombstones.jsonl')],
  ])('%s path that is a directory is an error naming that path', async (_, pathOf) => {
    const dir = freshDir();
    await (await fileStore({ directory: dir })).close();
    const path = pathOf(dir, randomStream());
    await mkdir(path);
    for (const readOnly of [false, true]) {
      const error = await openFailure({ directory: dir, readOnly });
      expect(error).toBeInstanceOf(StorageError);
      expect((error as Error).message).toContain(path);
    }
  });
});
