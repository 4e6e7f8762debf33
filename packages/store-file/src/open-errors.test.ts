import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError, StoreLockedError } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { freshDir, openFailure, randomStream, segmentsOf } from './test-support.fixture.js';

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

  it('a log directory the store may not create is a StorageError naming it', async () => {
    const dir = freshDir();
    const log = join(dir, 'log');
    const error = await openFailure({
      directory: dir,
      fs: { mkdir: async (path, mode) => (path === log ? Promise.reject(denied('mkdir', path)) : nodeFileSystem.mkdir(path, mode)) },
    });
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toContain(log);
    expect((error as Error).cause).toMatchObject({ code: 'EACCES' });
  });

  it('a segment the store may not create is an append rejected naming it; nothing is acknowledged', async () => {
    const dir = freshDir();
    const log = join(dir, 'log');
    const store = await fileStore({
      directory: dir,
      fs: {
        open: async (path, flags, mode) => {
          if (flags !== 'r' && path.startsWith(`${log}/`)) throw denied('open', path);
          return nodeFileSystem.open(path, flags, mode);
        },
      },
    });
    try {
      const error = await store.append(randomStream(), [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect((error as Error).message).toContain(log);
      expect((await store.status()).lastPosition).toBe(0);
    } finally {
      await store.close();
    }
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

  /** A closed store with one stream: one segment, format.json and store-id.json. */
  async function written(): Promise<string> {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    await store.append(randomStream(), [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.close();
    return dir;
  }

  it.each([
    ['the last segment', (dir: string) => segmentsOf(dir).at(-1) as string],
    ['a segment after the last', (dir: string) => join(dir, 'log', `${'9'.padStart(20, '0')}.jsonl`)],
    ['the format file', (dir: string) => join(dir, 'format.json')],
    ['the store id file', (dir: string) => join(dir, 'store-id.json')],
  ])('%s path that is a directory is an error naming that path, for a writer and a view', async (_, pathOf) => {
    const dir = await written();
    const path = pathOf(dir);
    await rm(path, { force: true });
    await mkdir(path);
    for (const readOnly of [false, true]) {
      const error = await openFailure({ directory: dir, readOnly });
      expect(error).toBeInstanceOf(StorageError);
      expect((error as Error).message).toContain(path);
    }
  });

  it.each(['log', 'blobs', 'checkpoints', 'index'])('a file where %s/ should be is refused at open naming it, for a writer and a view', async (name) => {
    const dir = await written();
    const path = join(dir, name);
    await rm(path, { recursive: true, force: true });
    await writeFile(path, 'not a directory');
    for (const readOnly of [false, true]) {
      const error = await openFailure({ directory: dir, readOnly });
      expect(error).toBeInstanceOf(StorageError);
      expect((error as Error).message).toContain(`${path} is not a directory`);
    }
    expect(await readFile(path, 'utf8')).toBe('not a directory');
  });
});
