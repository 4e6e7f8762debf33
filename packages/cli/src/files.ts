import { createWriteStream, existsSync, statSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { CliError, ExitCode, notFound, refused, usageError } from './exit-codes.js';

/**
 * Checks that `path` names something to read: "not found" (exit 3) when nothing is there, a usage error when it is a
 * directory, or (with `regular`, for a file read more than once) anything but a regular file, such as a pipe.
 */
export function assertInputFile(path: string, what: string, options: { regular?: boolean } = {}): void {
  const stats = statSync(path, { throwIfNoEntry: false });
  const named = what === 'file' ? 'a file' : `a ${what}`;
  if (!stats) throw notFound(`no ${what} ${path}`, 'Try: check the path');
  if (stats.isDirectory()) throw usageError(`${path} is a directory, not ${named}`, 'Try: the path of the file inside it');
  if (options.regular && !stats.isFile())
    throw usageError(`${path} is not a regular file: it is read twice (checked, then loaded)`, 'Try: save it to a file first');
}

/** Refuses (exit 1) to write over an existing file. */
export function refuseExisting(path: string): void {
  if (existsSync(path)) throw overwriteRefused(path);
}

const overwriteRefused = (path: string) => refused(`${path} exists; export never overwrites a file`, 'Try: another --out path');

/**
 * Creates `path` for writing, never over an existing file: an existing file is refused (exit 1), a missing
 * directory is "not found" (exit 3), anything else a storage error naming the file.
 */
export async function createOutputFile(path: string): Promise<WriteStream> {
  const stream = createWriteStream(path, { flags: 'wx', mode: 0o600 });
  try {
    await once(stream, 'open');
    return stream;
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    if (code === 'EEXIST') throw overwriteRefused(path);
    if (code === 'ENOENT') throw notFound(`cannot create ${path}: its directory does not exist`, 'Try: an --out path in an existing directory');
    throw new CliError(ExitCode.storage, `cannot create ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      hint: 'Try: another --out path, or check its directory’s permissions',
      cause,
    });
  }
}
