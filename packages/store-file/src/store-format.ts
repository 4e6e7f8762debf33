import { CorruptionError, StorageError, UnsupportedFormatError } from '@sessionfold/core/kernel';
import { writeFileAtomic } from '@sessionfold/atomic-write';
import { atomicWriteFs, errorCode, removeTemporariesOf, type FileSystem } from './fs-layer.js';
import { decodeLine, frameLine } from './journal-codec.js';

/** Names the kind of directory, so a store is never mistaken for some other directory of JSON files. */
export const STORE_FORMAT = 'sessionfold.file-store';
/**
 * The newest layout this release reads and writes. 1: release 0.1.0, which wrote no format file. 2: the format
 * file, and a blob's owner recorded before the blob. 3: journal lines may carry `schemaVersion`. 4: one
 * segmented log instead of a journal per stream. A store of version 1–3 is upgraded to 4 by its first writer
 * (see `legacy/upgrade.ts`); the format file is the switch, so a release that knows only 1–3 refuses the result.
 */
export const STORE_FORMAT_VERSION = 4;
/** The newest layout of one journal per stream: stores of this version or older are read by `legacy/` only. */
export const LAST_LEGACY_FORMAT_VERSION = 3;
/** What a writer records when it opens a store of an older layout: everything but event schema versions. */
export const BASE_FORMAT_VERSION = 2;
/** The first layout whose journal lines may carry `schemaVersion`. */
export const EVENT_VERSIONS_FORMAT_VERSION = 3;

/**
 * The format version of the store whose format file is `path`: 1 when there is none (release 0.1.0). A newer
 * version than this release knows is `UnsupportedFormatError`, a damaged file `CorruptionError`; only reads.
 */
export async function readStoreFormat(fsl: FileSystem, path: string): Promise<number> {
  let bytes: Buffer;
  try {
    bytes = await fsl.readFile(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return 1;
    throw new StorageError(`@sessionfold/store-file: could not read ${path}.`, { cause: error });
  }
  const fail = (reason: string): never => {
    throw new CorruptionError(path, 1, reason);
  };
  if (bytes.length === 0 || bytes.indexOf(0x0a) !== bytes.length - 1) fail('a format file is exactly one line ending in a newline');
  const decoded = decodeLine(bytes, 0, bytes.length - 1);
  if ('reason' in decoded) return fail(decoded.reason);
  const { format, formatVersion } = (decoded.value ?? {}) as Record<string, unknown>;
  if (format !== STORE_FORMAT) fail(`format is ${JSON.stringify(format)}, not ${JSON.stringify(STORE_FORMAT)}`);
  if (typeof formatVersion !== 'number' || !Number.isSafeInteger(formatVersion) || formatVersion < 2) {
    return fail(`formatVersion ${JSON.stringify(formatVersion)} is not an integer ≥ 2`);
  }
  if (formatVersion > STORE_FORMAT_VERSION) throw new UnsupportedFormatError(path, formatVersion, STORE_FORMAT_VERSION);
  return formatVersion;
}

/**
 * Records format `version` in `path`, atomically (temp sibling, fsync, rename, fsync directory), and removes
 * what an earlier attempt cut short left behind. Only the writer, holding the lock, calls it.
 */
export async function writeStoreFormat(fsl: FileSystem, path: string, version: number): Promise<void> {
  await removeTemporariesOf(fsl, path);
  const line = frameLine(JSON.stringify({ format: STORE_FORMAT, formatVersion: version }));
  try {
    await writeFileAtomic(path, line, { mode: 0o600, fs: atomicWriteFs(fsl) });
  } catch (cause) {
    throw new StorageError(`@sessionfold/store-file: could not write ${path}.`, { cause });
  }
}
