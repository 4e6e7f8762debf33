import { closeSync, constants, fstatSync, lstatSync, openSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { WriteStream } from 'node:fs';
import { CliError, ExitCode, notFound, refused, usageError } from './exit-codes.js';

/**
 * What a file that is not a regular file is, in words. A FIFO or a device would hang or never end a read, so the
 * CLI never reads one where it expects a file.
 */
export function kindOf(stats: Stats): string {
  if (stats.isFile()) return 'a regular file';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** How a file is opened: `follow` a symbolic link only where the user named the path themselves. */
export interface OpenRegularOptions {
  /** Follow a symbolic link (to a regular file) rather than refuse it; default false. */
  follow?: boolean;
}

/** `O_NONBLOCK`: opening a FIFO without a writer returns at once; `O_NOFOLLOW` unless a link may be followed. */
const flagsFor = (options: OpenRegularOptions) => constants.O_RDONLY | constants.O_NONBLOCK | (options.follow ? 0 : constants.O_NOFOLLOW);

/**
 * Why `path` cannot be read as a file (a usage error naming it, or "not found"), or undefined when its entry may
 * be opened: checked with `lstat` before anything is opened.
 */
function refusal(path: string, what: string, options: OpenRegularOptions): CliError | undefined {
  let stats: Stats | undefined;
  try {
    stats = lstatSync(path, { throwIfNoEntry: false });
  } catch (cause) {
    return unreadable(path, cause);
  }
  if (!stats) return notFound(`no ${what} ${path}`, 'Try: check the path');
  if (stats.isSymbolicLink() && options.follow) return undefined;
  return stats.isFile() ? undefined : notRegular(path, what, stats);
}

function notRegular(path: string, what: string, stats: Stats): CliError {
  const hint = stats.isDirectory() ? 'Try: the path of the file inside it' : 'Try: save it to a regular file first';
  if (stats.isDirectory()) return usageError(`${path} is a directory, not ${article(what)}`, hint);
  const link = stats.isSymbolicLink() ? ', which is not followed' : '';
  return usageError(`${path} is ${kindOf(stats)}${link}: not a regular file, so not read as ${article(what)}`, hint);
}

const article = (what: string) => (/^[aeiou]/.test(what) ? `an ${what}` : `a ${what}`);

function unreadable(path: string, cause: unknown): CliError {
  const code = (cause as { code?: unknown }).code;
  if (code === 'ENOENT') return notFound(`no file ${path}`, 'Try: check the path');
  return new CliError(ExitCode.storage, `cannot read ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, {
    hint: 'Try: check the file and its permissions',
    cause,
  });
}

/** The error for an open that failed: a link met despite `lstat` (replaced meanwhile) is refused as one. */
function openFailure(path: string, what: string, cause: unknown): CliError {
  const code = (cause as { code?: unknown }).code;
  if (code === 'ELOOP') return usageError(`${path} is a symbolic link, which is not followed: not a regular file, so not read as ${article(what)}`);
  if (code === 'EISDIR') return usageError(`${path} is a directory, not ${article(what)}`, 'Try: the path of the file inside it');
  return unreadable(path, cause);
}

/**
 * Opens `path` for reading only if it is a regular file: `lstat` first, then `O_NOFOLLOW | O_NONBLOCK` (unless
 * `follow`) and an `fstat` of what was opened, so that a FIFO, a device, a directory or a link swapped in between
 * is a usage error naming the file rather than a read that hangs or never ends.
 */
export async function openRegularFile(path: string, what: string, options: OpenRegularOptions = {}): Promise<FileHandle> {
  const refused = refusal(path, what, options);
  if (refused) throw refused;
  let handle: FileHandle;
  try {
    handle = await open(path, flagsFor(options));
  } catch (cause) {
    throw openFailure(path, what, cause);
  }
  const stats = await handle.stat().catch(async (cause: unknown) => {
    await handle.close();
    throw unreadable(path, cause);
  });
  if (!stats.isFile()) {
    await handle.close();
    throw notRegular(path, what, stats);
  }
  return handle;
}

/** `openRegularFile` for a synchronous reader: the descriptor of a regular file, which the caller closes. */
export function openRegularFileSync(path: string, what: string, options: OpenRegularOptions = {}): number {
  const refused = refusal(path, what, options);
  if (refused) throw refused;
  let fd: number;
  try {
    fd = openSync(path, flagsFor(options));
  } catch (cause) {
    throw openFailure(path, what, cause);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw notRegular(path, what, stats);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error instanceof CliError ? error : unreadable(path, error);
  }
}

/** The whole of the regular file `path` (see `openRegularFile`); its size bounds what is read. */
export async function readRegularFile(path: string, what: string, options: OpenRegularOptions = {}): Promise<Buffer> {
  const handle = await openRegularFile(path, what, options);
  try {
    return await handle.readFile();
  } catch (cause) {
    throw unreadable(path, cause);
  } finally {
    await handle.close();
  }
}

/**
 * Checks that `path`, a path the user named, is a regular file (a link to one is followed): "not found" (exit 3)
 * when nothing is there, a usage error naming it when it is a directory, a FIFO, a device or a socket.
 */
export async function assertInputFile(path: string, what: string): Promise<void> {
  await (await openRegularFile(path, what, { follow: true })).close();
}

/** Refuses (exit 1) to write over anything already at `path`, even a link that leads nowhere. */
export function refuseExisting(path: string): void {
  if (lstatSync(path, { throwIfNoEntry: false })) throw overwriteRefused(path);
}

const overwriteRefused = (path: string) => refused(`${path} exists; export never overwrites a file`, 'Try: another --out path');

/**
 * Creates `path` for writing, never over an existing file and never through a link: an existing entry is refused
 * (exit 1), a missing directory is "not found" (exit 3), anything else a storage error naming the file.
 */
export async function createOutputFile(path: string): Promise<WriteStream> {
  // O_EXCL with O_CREAT fails on any existing entry, a link included; O_NOFOLLOW says so twice.
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  try {
    return (await open(path, flags, 0o600)).createWriteStream();
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'EEXIST' || code === 'ELOOP') throw overwriteRefused(path);
    if (code === 'ENOENT') throw notFound(`cannot create ${path}: its directory does not exist`, 'Try: an --out path in an existing directory');
    throw new CliError(ExitCode.storage, `cannot create ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      hint: 'Try: another --out path, or check its directory’s permissions',
      cause,
    });
  }
}
