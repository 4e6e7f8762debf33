import * as fs from 'node:fs';
import { SessionfoldError, StorageError } from '@sessionfold/core/kernel';
import { dirname, join } from 'node:path';
import { AtomicWriteIoError, errorCode, isTemporaryName, syncDirectory, type AtomicWriteFileHandle, type AtomicWriteFs } from '@sessionfold/atomic-write';

export { errorCode };

/**
 * What a failed write's cause says that a person can act on, as the end of a message: ": the disk is full
 * (ENOSPC)" when the disk or the user's quota is full (found along the causes), otherwise nothing.
 */
export function fullDiskReason(cause: unknown): string {
  for (let at = cause, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++) {
    const code = errorCode(at);
    if (code === 'ENOSPC') return ': the disk is full (ENOSPC)';
    if (code === 'EDQUOT') return ': the disk quota is used up (EDQUOT)';
  }
  return '';
}

/**
 * The file-system calls the file store makes, by file descriptor so that one write and one fdatasync
 * serve a whole flush. `fileStore({ fs })` replaces any of them, which is how tests inject a full disk
 * (ENOSPC part-way through a write) or a failing fdatasync (EIO).
 */
export interface FileSystem {
  open(path: string, flags: string, mode?: number): Promise<number>;
  close(fd: number): Promise<void>;
  /** Reads up to `length` bytes at `position`; resolves with how many were read (0 at end of file). */
  read(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  /** Writes up to `length` bytes at `position`; resolves with how many were written (may be fewer). */
  write(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  fdatasync(fd: number): Promise<void>;
  fsync(fd: number): Promise<void>;
  ftruncate(fd: number, length: number): Promise<void>;
  fchmod(fd: number, mode: number): Promise<void>;
  /** Size, and the inode number that tells a replaced file from the one that was opened before. */
  fstat(fd: number): Promise<{ size: number; ino: number }>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  link(existing: string, path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  mkdir(path: string, mode: number): Promise<void>;
  /** Size, and (when the file system gives them) the inode and modification time that tell a file changed. */
  lstat(path: string): Promise<{ isDirectory(): boolean; size: number; ino?: number; mtimeMs?: number }>;
  readFile(path: string): Promise<Buffer>;
}

const call =
  <A extends unknown[], R>(fn: (...args: [...A, (error: NodeJS.ErrnoException | null, result: R) => void]) => void) =>
  (...args: A): Promise<R> =>
    new Promise<R>((resolve, reject) => fn(...args, (error, result) => (error ? reject(error) : resolve(result))));

const { O_RDONLY, O_RDWR, O_WRONLY, O_CREAT, O_EXCL, O_TRUNC, O_APPEND } = fs.constants;
// Absent on Windows, where neither a FIFO nor a symlink can stand where the store expects a file in the same way.
const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = fs.constants.O_NONBLOCK ?? 0;
const OPEN_FLAGS: Readonly<Record<string, number>> = {
  r: O_RDONLY,
  'r+': O_RDWR,
  w: O_WRONLY | O_CREAT | O_TRUNC,
  wx: O_WRONLY | O_CREAT | O_TRUNC | O_EXCL,
  'w+': O_RDWR | O_CREAT | O_TRUNC,
  'wx+': O_RDWR | O_CREAT | O_TRUNC | O_EXCL,
  a: O_WRONLY | O_CREAT | O_APPEND,
  'a+': O_RDWR | O_CREAT | O_APPEND,
};

/**
 * `flags` as open(2) flags that never follow a symlink in the last component and never wait: a FIFO opens at
 * once (its reader end) or fails (its writer end), so the `fstat` that follows can refuse it instead of hanging.
 */
function safeFlags(flags: string): number {
  const base = OPEN_FLAGS[flags];
  if (base === undefined) throw new TypeError(`@sessionfold/store-file: unsupported open flags ${flags}`);
  return base | O_NOFOLLOW | O_NONBLOCK;
}

/** What a non-regular file at `path` is, for the error that refuses it. */
function kindOf(stats: fs.Stats): string {
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/**
 * The error for a file that is not what the store expects at `path`: native-shaped (a `code`, the path in the
 * message), so every caller names the file as it names any other failure to open it.
 */
function notAFile(path: string, what: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${path} is ${what}, not a regular file; the store opens no other kind of file`), { code: 'EFTYPE', path });
}

/** Names a symlink that O_NOFOLLOW refused as such; ELOOP alone says "too many symbolic links". */
function openFailure(path: string, error: unknown): unknown {
  return errorCode(error) === 'ELOOP' ? Object.assign(notAFile(path, 'a symbolic link'), { cause: error }) : error;
}

/** Keeps `fd` only if it is a regular file (or a directory, opened to be synced); closes it and throws otherwise. */
function checkedFd(path: string, fd: number): number {
  let stats: fs.Stats;
  try {
    stats = fs.fstatSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
  if (stats.isFile() || stats.isDirectory()) return fd;
  fs.closeSync(fd);
  throw notAFile(path, kindOf(stats));
}

/** Opens `path` safely (see `safeFlags`), refusing anything but a regular file or a directory. */
async function openChecked(path: string, flags: string, mode: number | undefined): Promise<number> {
  let fd: number;
  try {
    fd = await call<[string, number, number | undefined], number>(fs.open)(path, safeFlags(flags), mode);
  } catch (error) {
    throw openFailure(path, error);
  }
  return checkedFd(path, fd);
}

/** Reads the whole regular file at `path` through `openChecked`: a FIFO, a device or a symlink is refused, never read. */
async function readRegularFile(path: string): Promise<Buffer> {
  const fd = await openChecked(path, 'r', undefined);
  try {
    // Read through a descriptor, a directory reads as empty instead of failing: refuse it as a path read would.
    if (fs.fstatSync(fd).isDirectory()) {
      throw Object.assign(new Error(`EISDIR: illegal operation on a directory, read '${path}'`), { code: 'EISDIR', path });
    }
    return await call<[number], Buffer>(fs.readFile as never)(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The real file system (node's callback API, which is cheaper per call than `FileHandle`). It is the one place
 * the store opens files: nothing is opened through a symlink and nothing but a regular file (or a directory, to
 * sync it) is kept open, so a FIFO or a link put in the directory is refused naming it instead of hanging or
 * writing elsewhere.
 */
export const nodeFileSystem: FileSystem = {
  open: (path, flags, mode) => openChecked(path, flags, mode),
  close: (fd) => call<[number], void>(fs.close)(fd),
  read: (fd, buffer, offset, length, position) =>
    call<[number, Uint8Array, number, number, number], number>(fs.read as never)(fd, buffer, offset, length, position),
  // A write only copies into the page cache: done inline it saves a thread-pool round trip per flush,
  // which under load costs more than the copy. The fdatasync that follows is what waits on the disk.
  write: async (fd, buffer, offset, length, position) => fs.writeSync(fd, buffer, offset, length, position),
  fdatasync: (fd) => call<[number], void>(fs.fdatasync)(fd),
  fsync: (fd) => call<[number], void>(fs.fsync)(fd),
  ftruncate: (fd, length) => call<[number, number], void>(fs.ftruncate)(fd, length),
  fchmod: (fd, mode) => call<[number, number], void>(fs.fchmod)(fd, mode),
  fstat: (fd) => call<[number], fs.Stats>(fs.fstat)(fd),
  rename: (from, to) => call<[string, string], void>(fs.rename)(from, to),
  unlink: (path) => call<[string], void>(fs.unlink)(path),
  link: (existing, path) => call<[string, string], void>(fs.link)(existing, path),
  readdir: (path) => call<[string], string[]>(fs.readdir)(path),
  mkdir: async (path, mode) => {
    await fs.promises.mkdir(path, { recursive: true, mode });
  },
  lstat: (path) => call<[string], fs.Stats>(fs.lstat)(path),
  readFile: (path) => readRegularFile(path),
};

/**
 * The store directory with the symlinks in its path resolved: the caller chose it, so it may be reached through a
 * link, while nothing inside it is followed. A directory not there yet is taken as given.
 */
export function realDirectory(path: string): string {
  try {
    return fs.realpathSync.native(path);
  } catch {
    return path;
  }
}

/** The default file system with the caller's replacements applied. */
export function withOverrides(overrides: Partial<FileSystem> | undefined): FileSystem {
  if (!overrides) return nodeFileSystem;
  return { ...nodeFileSystem, ...overrides };
}

/** Writes all of `bytes` at `position`, looping over short writes (a full disk shows up as one). */
export async function writeAll(fsl: FileSystem, fd: number, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.length) {
    const written = await fsl.write(fd, bytes, done, bytes.length - done, position + done);
    if (written <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    done += written;
  }
}

/** Reads `bytes.length` bytes at `position`; how many it got (fewer at the end of the file). */
export async function readAll(fsl: FileSystem, fd: number, bytes: Uint8Array, position: number): Promise<number> {
  let got = 0;
  while (got < bytes.length) {
    const n = await fsl.read(fd, bytes, got, bytes.length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/**
 * Fsyncs a directory so that names created, renamed or removed in it survive a crash: the atomic writer's
 * `syncDirectory` on this file system (so injected faults reach it), throwing the native error as the store's
 * callers expect.
 */
export async function syncDir(fsl: FileSystem, path: string): Promise<void> {
  try {
    await syncDirectory(path, { fs: atomicWriteFs(fsl) });
  } catch (error) {
    throw error instanceof AtomicWriteIoError ? error.cause : error;
  }
}

/** Removes `path`; a file that is already gone is not an error. */
export async function unlinkIfPresent(fsl: FileSystem, path: string): Promise<boolean> {
  try {
    await fsl.unlink(path);
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
}

/** Removes what atomic writes of `path` cut short left behind; only the writer, holding the lock, calls it. */
export async function removeTemporariesOf(fsl: FileSystem, path: string): Promise<void> {
  for (const name of await listDir(fsl, dirname(path))) {
    if (isTemporaryName(name, path)) await unlinkIfPresent(fsl, join(dirname(path), name));
  }
}

/** Directory entries, or none when the directory does not exist. */
export async function listDir(fsl: FileSystem, path: string): Promise<string[]> {
  try {
    return await fsl.readdir(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
}

/**
 * Runs `read` of the file at `path`; a native failure (a directory where a file should be, EACCES, EIO) leaves
 * as a `StorageError` naming `path`, so the message says which file. The store's own errors pass through.
 */
export async function readingFile<T>(path: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (cause) {
    if (cause instanceof SessionfoldError) throw cause;
    throw unreadable(path, cause);
  }
}

/** The `StorageError` for a native failure to read the file at `path`, naming it and the failure. */
export function unreadable(path: string, cause: unknown): StorageError {
  const reason = cause instanceof Error ? `: ${cause.message}` : '';
  return new StorageError(`@sessionfold/store-file: could not read ${path}${reason}.`, { cause });
}

/** Adapts the store's file system to the atomic writer's, so injected faults reach snapshots and blobs too. */
export function atomicWriteFs(fsl: FileSystem): AtomicWriteFs {
  return {
    mkdir: async (path, options) => fsl.mkdir(path, options.mode),
    lstat: (path) => fsl.lstat(path),
    rename: (from, to) => fsl.rename(from, to),
    unlink: (path) => fsl.unlink(path),
    open: async (path, flags, mode): Promise<AtomicWriteFileHandle> => {
      const fd = await fsl.open(path, flags, mode);
      let position = 0;
      return {
        writeFile: async (data) => {
          const bytes = typeof data === 'string' ? Buffer.from(data) : data;
          await writeAll(fsl, fd, bytes, position);
          position += bytes.length;
        },
        chmod: (m) => fsl.fchmod(fd, m),
        sync: () => fsl.fsync(fd),
        close: () => fsl.close(fd),
      };
    },
  };
}
