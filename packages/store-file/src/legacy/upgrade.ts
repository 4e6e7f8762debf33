import { rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode, listDir, removeTemporariesOf, syncDir, unlinkIfPresent, writeAll, type FileSystem } from '../fs-layer.js';
import { LAST_LEGACY_FORMAT_VERSION, STORE_FORMAT_VERSION, readStoreFormat, writeStoreFormat } from '../store-format.js';
import { legacyLogLines } from './legacy-log.js';

/** The one segment an upgrade writes: it starts the log, at position 1. */
export const FIRST_SEGMENT = '00000000000000000001.jsonl';
/** Where the log is built before it is renamed into place. */
const STAGING = 'log.upgrade';
/** Files and directories of formats 1–3 that format 4 has no use for (blobs/, checkpoints/, store-id.json and LOCK stay). */
const LEGACY_FILES = ['tombstones.jsonl', 'manifest.json', 'clean-close.json'];
const LEGACY_DIRS = ['streams', 'owners', 'blanks', STAGING];
/** Bytes written at a time, so a large store is not copied into one buffer. */
const WRITE_BYTES = 1 << 20;

/**
 * Upgrades a store of format 1–3 to format 4, crash-safely: the log is built in `log.upgrade/`, made durable and
 * renamed to `log/`, then format.json is switched to 4 in one atomic rename, and only then are the old files removed.
 * A crash before the switch leaves the old layout untouched; after it, the new one (with leftovers
 * `removeLegacyLeftovers` removes). The caller holds the writer's lock.
 */
export async function upgradeLegacyStore(fsl: FileSystem, directory: string): Promise<void> {
  const formatPath = join(directory, 'format.json');
  if ((await readStoreFormat(fsl, formatPath)) > LAST_LEGACY_FORMAT_VERSION) {
    await removeLegacyLeftovers(fsl, directory);
    return;
  }
  const { lines } = await legacyLogLines(fsl, directory);
  const staging = join(directory, STAGING);
  const log = join(directory, 'log');
  // What an earlier attempt cut short left: format.json still says ≤ 3, so none of it is the store's yet.
  await removeTree(fsl, staging);
  await fsl.mkdir(staging, 0o700);
  await writeSegment(fsl, join(staging, FIRST_SEGMENT), lines);
  await syncDir(fsl, staging);
  await removeTree(fsl, log);
  await fsl.rename(staging, log);
  await syncDir(fsl, directory);
  // The switch: from here on the store is the log, whatever happens to the old files.
  await writeStoreFormat(fsl, formatPath, STORE_FORMAT_VERSION);
  await removeLegacyLeftovers(fsl, directory);
}

/**
 * Removes what formats 1–3 left in a store whose format.json says 4 (an upgrade cut short after its switch), and
 * makes the removal durable; a store still of an older format is left alone. Only the writer calls it.
 */
export async function removeLegacyLeftovers(fsl: FileSystem, directory: string): Promise<void> {
  if ((await readStoreFormat(fsl, join(directory, 'format.json'))) <= LAST_LEGACY_FORMAT_VERSION) return;
  let removed = false;
  for (const name of LEGACY_FILES) {
    const path = join(directory, name);
    removed = (await unlinkIfPresent(fsl, path)) || removed;
    await removeTemporariesOf(fsl, path);
  }
  for (const name of LEGACY_DIRS) removed = (await removeTree(fsl, join(directory, name))) || removed;
  if (removed) await syncDir(fsl, directory);
}

/** Writes `lines` to a new file at `path` (mode 0600) and fdatasyncs it. */
async function writeSegment(fsl: FileSystem, path: string, lines: readonly string[]): Promise<void> {
  const fd = await fsl.open(path, 'wx', 0o600);
  try {
    let offset = 0;
    for (let from = 0; from < lines.length; ) {
      let chunk = '';
      while (from < lines.length && chunk.length < WRITE_BYTES) chunk += lines[from++];
      const bytes = Buffer.from(chunk);
      await writeAll(fsl, fd, bytes, offset);
      offset += bytes.length;
    }
    await fsl.fdatasync(fd);
  } finally {
    await fsl.close(fd);
  }
}

/** Removes the directory at `path` and everything in it; false when there was none. */
async function removeTree(fsl: FileSystem, path: string): Promise<boolean> {
  let stats: { isDirectory(): boolean };
  try {
    stats = await fsl.lstat(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
  if (!stats.isDirectory()) return unlinkIfPresent(fsl, path);
  for (const name of await listDir(fsl, path)) await removeTree(fsl, join(path, name));
  try {
    // The store's file system has no rmdir: an empty directory is removed through node's.
    await rmdir(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
  return true;
}
