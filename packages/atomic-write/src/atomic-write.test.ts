import * as nodeFs from 'node:fs/promises';
import { mkdtemp, readFile, readdir, stat, lstat, readlink, symlink, writeFile, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeFileAtomic, syncDirectory, temporarySibling, isTemporaryName, type AtomicWriteFs, type AtomicWriteFileHandle } from './atomic-write.js';
import { AtomicWriteDirectorySyncError, DestinationIsDirectoryError, AtomicWriteIoError } from './errors.js';

const posix = process.platform !== 'win32';
if (!posix) console.info('atomic-write: the tests of permission bits, symbolic links and directory sync are skipped: they need POSIX');
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'atomic-write-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

type HandleHooks = Partial<Record<'writeFile' | 'sync' | 'chmod' | 'close', () => Promise<void>>>;

/** The real file system, with hooks that run before (or instead of, by throwing) chosen calls. */
function faultyFs(hooks: {
  open?: (path: string, flags: string) => Promise<void>;
  rename?: () => Promise<void>;
  handle?: HandleHooks;
  directorySync?: () => Promise<void>;
}): AtomicWriteFs & { opened: string[] } {
  const real = nodeFs as unknown as AtomicWriteFs;
  const opened: string[] = [];
  return {
    opened,
    mkdir: (p, o) => real.mkdir(p, o),
    lstat: (p) => real.lstat(p),
    unlink: (p) => real.unlink(p),
    async rename(from, to) {
      await hooks.rename?.();
      return real.rename(from, to);
    },
    async open(path, flags, mode) {
      opened.push(path);
      await hooks.open?.(path, flags);
      const handle = await real.open(path, flags, mode);
      const h = flags === 'r' ? { sync: hooks.directorySync } : (hooks.handle ?? {});
      const wrap =
        <K extends keyof AtomicWriteFileHandle>(name: K) =>
        async (...args: Parameters<AtomicWriteFileHandle[K]>) => {
          await (h as HandleHooks)[name]?.();
          return (handle[name] as (...a: unknown[]) => Promise<void>)(...args);
        };
      return { writeFile: wrap('writeFile'), sync: wrap('sync'), chmod: wrap('chmod'), close: wrap('close') };
    },
  };
}

const boom =
  (code = 'EIO') =>
  async () => {
    throw Object.assign(new Error(`injected ${code}`), { code });
  };

async function entries(): Promise<string[]> {
  return (await readdir(dir)).sort();
}

describe('writeFileAtomic', () => {
  it('writes the bytes at the path, owner-only, and leaves nothing else beside it', async () => {
    const path = join(dir, 'state.json');
    await writeFileAtomic(path, new Uint8Array([1, 2, 3]));
    expect([...(await readFile(path))]).toEqual([1, 2, 3]);
    if (posix) expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await entries()).toEqual(['state.json']);
  });

  it('writes a string as UTF-8 and honours an explicit mode', async () => {
    const path = join(dir, 'text.txt');
    await writeFileAtomic(path, 'héllo ✓', { mode: 0o640 });
    expect(await readFile(path, 'utf8')).toBe('héllo ✓');
    if (posix) expect((await stat(path)).mode & 0o777).toBe(0o640);
  });

  it.skipIf(!posix)('sets the requested mode exactly, whatever the umask', async () => {
    const path = join(dir, 'shared');
    const previous = process.umask(0o077);
    try {
      await writeFileAtomic(path, 'x', { mode: 0o644 });
    } finally {
      process.umask(previous);
    }
    expect((await stat(path)).mode & 0o777).toBe(0o644);
  });

  it('creates missing parent directories owner-only', async () => {
    const path = join(dir, 'a', 'b', 'file');
    await writeFileAtomic(path, 'x');
    expect(await readFile(path, 'utf8')).toBe('x');
    if (posix) {
      expect((await stat(join(dir, 'a'))).mode & 0o777).toBe(0o700);
      expect((await stat(join(dir, 'a', 'b'))).mode & 0o777).toBe(0o700);
    }
  });

  it('replaces an existing file whole', async () => {
    const path = join(dir, 'file');
    await writeFile(path, 'a much longer previous content');
    await writeFileAtomic(path, 'new');
    expect(await readFile(path, 'utf8')).toBe('new');
    expect(await entries()).toEqual(['file']);
  });

  it.skipIf(!posix)('never follows or removes a symlink squatting on the temporary name', async () => {
    const path = join(dir, 'file');
    const victim = join(dir, 'victim');
    await writeFile(victim, 'do not touch');
    let squatted = '';
    const fs = faultyFs({
      async open(p, flags) {
        if (flags === 'wx' && !squatted) {
          squatted = p;
          await symlink(victim, p);
        }
      },
    });
    await writeFileAtomic(path, 'new', { fs });
    expect(await readFile(path, 'utf8')).toBe('new');
    expect(await readFile(victim, 'utf8')).toBe('do not touch');
    expect((await lstat(squatted)).isSymbolicLink()).toBe(true);
    expect(await readlink(squatted)).toBe(victim);
    expect(fs.opened.filter((p) => p !== dir)).toHaveLength(2);
    expect(await entries()).toEqual(['file', squatted.slice(dir.length + 1), 'victim'].sort());
  });

  it('takes a fresh name when the temporary name is occupied, leaving the occupant alone', async () => {
    const path = join(dir, 'file');
    let occupied = '';
    const fs = faultyFs({
      async open(p, flags) {
        if (flags === 'wx' && !occupied) {
          occupied = p;
          await writeFile(p, 'someone else');
        }
      },
    });
    await writeFileAtomic(path, 'new', { fs });
    expect(await readFile(path, 'utf8')).toBe('new');
    expect(await readFile(occupied, 'utf8')).toBe('someone else');
    expect(await entries()).toEqual(['file', occupied.slice(dir.length + 1)].sort());
  });

  it.skipIf(!posix)('replaces a symlink at the destination instead of writing through it', async () => {
    const path = join(dir, 'link');
    const victim = join(dir, 'victim');
    await writeFile(victim, 'do not touch');
    await symlink(victim, path);
    await writeFileAtomic(path, 'new');
    expect((await lstat(path)).isSymbolicLink()).toBe(false);
    expect(await readFile(path, 'utf8')).toBe('new');
    expect(await readFile(victim, 'utf8')).toBe('do not touch');
  });

  it('lets concurrent writes to one path each land whole, leaving no temporary files', async () => {
    const path = join(dir, 'contended');
    const bodies = Array.from({ length: 8 }, (_, i) => String(i).repeat(10_000 + i));
    await Promise.all(bodies.map((body) => writeFileAtomic(path, body)));
    expect(bodies).toContain(await readFile(path, 'utf8'));
    expect(await entries()).toEqual(['contended']);
  });

  it('refuses a directory at the destination and leaves it and its contents as they were', async () => {
    const path = join(dir, 'taken');
    await mkdir(path);
    await writeFile(join(path, 'inside'), 'kept');
    const error = await writeFileAtomic(path, 'new').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationIsDirectoryError);
    expect((error as DestinationIsDirectoryError).code).toBe('destination_is_directory');
    expect((error as DestinationIsDirectoryError).path).toBe(path);
    expect(await entries()).toEqual(['taken']);
    expect(await readFile(join(path, 'inside'), 'utf8')).toBe('kept');
  });

  it('reports a directory that appears at the destination between the check and the rename', async () => {
    const path = join(dir, 'late');
    const fs = faultyFs({ rename: () => mkdir(path).then(() => undefined) });
    const error = await writeFileAtomic(path, 'new', { fs }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationIsDirectoryError);
    expect(await entries()).toEqual(['late']);
  });

  for (const step of ['writeFile', 'sync', 'close'] as const) {
    it(`keeps the previous file and removes only its own temporary file when ${step} fails`, async () => {
      const path = join(dir, 'file');
      await writeFile(path, 'previous');
      const fs = faultyFs({ handle: { [step]: boom('ENOSPC') } });
      const error = await writeFileAtomic(path, 'new', { fs }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AtomicWriteIoError);
      const io = error as AtomicWriteIoError;
      expect(io.code).toBe('atomic_write_io');
      expect(io.path).toBe(fs.opened[0]);
      expect(io.message).toContain(io.path);
      expect((io.cause as Error).message).toBe('injected ENOSPC');
      expect(await readFile(path, 'utf8')).toBe('previous');
      expect(await entries()).toEqual(['file']);
    });
  }

  it('keeps the previous file and removes its temporary file when the rename fails', async () => {
    const path = join(dir, 'file');
    await writeFile(path, 'previous');
    const fs = faultyFs({ rename: boom('EXDEV') });
    const error = await writeFileAtomic(path, 'new', { fs }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtomicWriteIoError);
    expect((error as AtomicWriteIoError).path).toBe(path);
    expect((error as AtomicWriteIoError).operation).toBe('replace');
    expect(await readFile(path, 'utf8')).toBe('previous');
    expect(await entries()).toEqual(['file']);
  });

  it('reports a failure to create the temporary file naming it, and creates nothing', async () => {
    const path = join(dir, 'file');
    const fs = faultyFs({ open: boom('EACCES') });
    const error = await writeFileAtomic(path, 'new', { fs }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtomicWriteIoError);
    expect((error as AtomicWriteIoError).operation).toBe('create temporary file');
    expect((error as AtomicWriteIoError).path).toBe(fs.opened[0]);
    expect(await entries()).toEqual([]);
  });

  it.skipIf(!posix)('reports a directory-sync failure as its own error, with the new file already in place', async () => {
    const path = join(dir, 'file');
    await writeFile(path, 'previous');
    const fs = faultyFs({ directorySync: boom('EIO') });
    const error = await writeFileAtomic(path, 'new', { fs }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AtomicWriteDirectorySyncError);
    const e = error as AtomicWriteDirectorySyncError;
    expect(e.code).toBe('atomic_write_directory_sync');
    expect(e.path).toBe(path);
    expect(e.directory).toBe(dir);
    expect(await readFile(path, 'utf8')).toBe('new');
    expect(await entries()).toEqual(['file']);
  });
});

describe('syncDirectory', () => {
  it.skipIf(!posix)('syncs an existing directory and fails on a missing one', async () => {
    await expect(syncDirectory(dir)).resolves.toBeUndefined();
    await expect(syncDirectory(join(dir, 'missing'))).rejects.toMatchObject({
      code: 'atomic_write_io',
      path: join(dir, 'missing'),
      cause: { code: 'ENOENT' },
    });
  });
});

describe('temporary siblings', () => {
  it('are hidden siblings of the target, fresh on every call, and recognised as leftovers of that target', () => {
    const target = join(dir, 'journal.jsonl');
    const [first, second] = [temporarySibling(target), temporarySibling(target)];
    expect(first).not.toBe(second);
    for (const temp of [first, second]) {
      expect(temp.startsWith(join(dir, '.journal.jsonl.'))).toBe(true);
      const name = temp.slice(dir.length + 1);
      expect(isTemporaryName(name)).toBe(true);
      expect(isTemporaryName(name, target)).toBe(true);
      expect(isTemporaryName(name, join(dir, 'journal'))).toBe(false);
    }
    expect(isTemporaryName('journal.jsonl')).toBe(false);
  });

  it('keep a long name within the file system limit', () => {
    const temp = temporarySibling(join(dir, 'x'.repeat(250)));
    expect(temp.slice(dir.length + 1).length).toBeLessThan(255);
  });
});
