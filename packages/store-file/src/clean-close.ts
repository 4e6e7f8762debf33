import { writeFileAtomic } from '@sessionfold/atomic-write';
import { StorageError } from '@sessionfold/core/kernel';
import { atomicWriteFs, syncDir, unlinkIfPresent, type FileSystem } from './fs-layer.js';
import { decodeLine, frameLine } from './journal-codec.js';
import { stampOf, unchanged, type FileStamp } from './manifest.js';

/** Names the kind of file, so the mark is never mistaken for some other JSON. */
const CLEAN_CLOSE_FORMAT = 'sessionfold.file-store-clean-close';

/**
 * The mark a writer leaves when it closes cleanly: the checksum of the manifest it wrote (or found current)
 * and that file's stamp, written durably after it. A writer removes it durably at open, before it changes
 * anything, so the mark is there only while no writer has had the store open since that close: after a crash
 * it is missing. The stamp tells the directory from a copy of it (other inodes), whose files it does not vouch for.
 */
export async function writeCleanClose(fsl: FileSystem, path: string, manifestChecksum: string, manifestStamp: FileStamp): Promise<void> {
  const { size, ino, mtimeMs } = manifestStamp;
  const line = frameLine(JSON.stringify({ format: CLEAN_CLOSE_FORMAT, manifest: manifestChecksum, stamp: [size, ino, mtimeMs] }));
  await writeFileAtomic(path, line, { mode: 0o600, fs: atomicWriteFs(fsl) });
}

/**
 * True when the mark at `path` names the manifest with `checksum` (just read from `manifestPath`) and that
 * file is still the one the mark was written for: the directory's files are then as that manifest records them.
 */
export async function cleanlyClosed(fsl: FileSystem, path: string, checksum: string, manifestPath: string): Promise<boolean> {
  let bytes: Buffer;
  try {
    bytes = await fsl.readFile(path);
  } catch {
    return false;
  }
  if (bytes.length === 0 || bytes.indexOf(0x0a) !== bytes.length - 1) return false;
  const decoded = decodeLine(bytes, 0, bytes.length - 1);
  if ('reason' in decoded) return false;
  const { format, manifest, stamp } = (decoded.value ?? {}) as Record<string, unknown>;
  if (format !== CLEAN_CLOSE_FORMAT || manifest !== checksum || !Array.isArray(stamp) || stamp.length !== 3) return false;
  const [size, ino, mtimeMs] = stamp as unknown[];
  if (typeof size !== 'number' || typeof ino !== 'number' || typeof mtimeMs !== 'number') return false;
  const now = await stampOf(fsl, manifestPath);
  return now !== undefined && unchanged(now, { size, ino, mtimeMs });
}

/**
 * Removes the mark and syncs its directory, so that a crash from now on leaves none. Throws a `StorageError`
 * when that cannot be made sure of: a writer must not change anything while a stale mark could survive it.
 */
export async function removeCleanClose(fsl: FileSystem, path: string, directory: string): Promise<void> {
  try {
    if (!(await unlinkIfPresent(fsl, path))) return;
    await syncDir(fsl, directory);
  } catch (cause) {
    throw new StorageError(`@sessionfold/store-file: could not remove ${path} durably.`, { cause });
  }
}
