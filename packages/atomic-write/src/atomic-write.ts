import * as nodeFs from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { errorCode } from './error-code.js';
import { AtomicWriteDirectorySyncError, DestinationIsDirectoryError, AtomicWriteIoError } from './errors.js';

/** The slice of an open file handle the atomic writer uses (node's `FileHandle` satisfies it). */
export interface AtomicWriteFileHandle {
  /** Writes all of `data` from the current position. */
  writeFile(data: Uint8Array | string): Promise<void>;
  /** Sets the file's permission bits exactly, regardless of the umask. */
  chmod(mode: number): Promise<void>;
  /** Flushes the file's data and metadata to storage (fsync). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The slice of `node:fs/promises` the atomic writer uses; tests hand in a wrapper to inject faults. */
export interface AtomicWriteFs {
  mkdir(path: string, options: { recursive: true; mode: number }): Promise<unknown>;
  lstat(path: string): Promise<{ isDirectory(): boolean }>;
  /** Opens `path`; the writer passes `'wx'` (create exclusively, never follow) for files and `'r'` for directories. */
  open(path: string, flags: string, mode?: number): Promise<AtomicWriteFileHandle>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
}

export interface AtomicWriteOptions {
  /** Permission bits of the new file; default `0o600`. */
  mode?: number;
  /** File-system layer, `node:fs/promises` by default; injectable for fault tests. */
  fs?: AtomicWriteFs;
}

/** Permission bits for directories the writer creates. */
export const DIRECTORY_MODE = 0o700;
/** Permission bits for files the writer creates, unless told otherwise. */
export const FILE_MODE = 0o600;

const MAX_NAME_ATTEMPTS = 64;
const isPosix = process.platform !== 'win32';
let tempCounter = 0;

/**
 * Replaces `path` with `bytes` so that a reader sees the old file or the new one, never a mix: write a fresh
 * sibling temporary file, fsync it, rename it over `path`, fsync the directory.
 */
export async function writeFileAtomic(path: string, bytes: Uint8Array | string, options: AtomicWriteOptions = {}): Promise<void> {
  const fs = options.fs ?? (nodeFs as unknown as AtomicWriteFs);
  const mode = options.mode ?? FILE_MODE;
  const directory = dirname(path);

  try {
    await fs.mkdir(directory, { recursive: true, mode: DIRECTORY_MODE });
  } catch (cause) {
    throw new AtomicWriteIoError(directory, 'create directory', { cause });
  }
  await refuseDirectory(fs, path);

  const { tempPath, handle } = await createTemporary(fs, path, mode);
  let open = true;
  try {
    try {
      if (isPosix) await handle.chmod(mode);
      await handle.writeFile(bytes);
    } catch (cause) {
      throw new AtomicWriteIoError(tempPath, 'write', { cause });
    }
    try {
      await handle.sync();
    } catch (cause) {
      throw new AtomicWriteIoError(tempPath, 'sync', { cause });
    }
    open = false;
    try {
      await handle.close();
    } catch (cause) {
      throw new AtomicWriteIoError(tempPath, 'write', { cause });
    }
    try {
      await fs.rename(tempPath, path);
    } catch (cause) {
      if (await isDirectory(fs, path)) throw new DestinationIsDirectoryError(path, { cause });
      throw new AtomicWriteIoError(path, 'replace', { cause });
    }
  } catch (error) {
    if (open) await handle.close().catch(() => undefined);
    await fs.unlink(tempPath).catch(() => undefined);
    throw error;
  }

  try {
    await syncDirectory(directory, { fs });
  } catch (error) {
    const cause = error instanceof AtomicWriteIoError ? error.cause : error;
    throw new AtomicWriteDirectorySyncError(path, directory, { cause });
  }
}

/**
 * Flushes a directory's entries (new names, renames) to storage; throws `AtomicWriteIoError` naming it.
 * A no-op on Windows, where a directory cannot be opened for sync.
 */
export async function syncDirectory(path: string, options: { fs?: AtomicWriteFs } = {}): Promise<void> {
  if (!isPosix) return;
  const fs = options.fs ?? (nodeFs as unknown as AtomicWriteFs);
  try {
    const handle = await fs.open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (cause) {
    throw new AtomicWriteIoError(path, 'sync', { cause });
  }
}

async function refuseDirectory(fs: AtomicWriteFs, path: string): Promise<void> {
  if (await isDirectory(fs, path)) throw new DestinationIsDirectoryError(path);
}

async function isDirectory(fs: AtomicWriteFs, path: string): Promise<boolean> {
  try {
    return (await fs.lstat(path)).isDirectory();
  } catch (cause) {
    if (errorCode(cause) === 'ENOENT') return false;
    throw new AtomicWriteIoError(path, 'inspect', { cause });
  }
}

/**
 * A fresh name for a temporary sibling of `path`: `.<name>.<pid>.<counter>.<random>.tmp`, hidden, unique within
 * the process and unlikely to collide across processes. Create it exclusively (`wx`) and rename it over `path`.
 */
export function temporarySibling(path: string): string {
  tempCounter += 1;
  return join(dirname(path), `.${temporaryBase(path)}.${process.pid}.${tempCounter}.${randomBytes(4).toString('hex')}.tmp`);
}

/**
 * Whether a directory entry is a temporary sibling left by an interrupted write: any hidden `.tmp` file, or
 * with `of`, one named for that file (the counter is optional: older writers left `.<name>.<pid>.<random>.tmp`).
 */
export function isTemporaryName(name: string, of?: string): boolean {
  if (!name.startsWith('.') || !name.endsWith('.tmp')) return false;
  if (of === undefined) return true;
  const prefix = `.${temporaryBase(of)}.`;
  return name.startsWith(prefix) && /^\d+\.(?:\d+\.)?[0-9a-f]+\.tmp$/.test(name.slice(prefix.length));
}

// Bounded so the suffix never pushes a long name past the file system's name limit.
function temporaryBase(path: string): string {
  return basename(path).slice(0, 100);
}

/** Creates a sibling temporary file with `wx`, so an existing file or symlink at the name is never opened or followed. */
async function createTemporary(fs: AtomicWriteFs, path: string, mode: number): Promise<{ tempPath: string; handle: AtomicWriteFileHandle }> {
  let lastCause: unknown;
  for (let attempt = 0; attempt < MAX_NAME_ATTEMPTS; attempt++) {
    const tempPath = temporarySibling(path);
    try {
      return { tempPath, handle: await fs.open(tempPath, 'wx', mode) };
    } catch (cause) {
      if (errorCode(cause) !== 'EEXIST') throw new AtomicWriteIoError(tempPath, 'create temporary file', { cause });
      lastCause = cause;
    }
  }
  throw new AtomicWriteIoError(join(dirname(path), `.${temporaryBase(path)}.*.tmp`), 'create temporary file', { cause: lastCause });
}
