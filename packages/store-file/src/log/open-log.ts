import { join } from 'node:path';
import { CorruptionError, StorageError } from '@sessionfold/core/kernel';
import { errorCode, syncDir, type FileSystem } from '../fs-layer.js';
import { loadIndexSnapshot } from './index-snapshot.js';
import { scanSegment } from './scan.js';
import { listSegments, type Segment } from './segments.js';
import { StreamIndex } from './stream-index.js';

/** The log as open found it: its segments (sizes and marks set) and the index of what they hold. */
export interface OpenedLog {
  segments: Segment[];
  index: StreamIndex;
}

/**
 * Reads the log of `logDir` into an index: from the newest index snapshot in `indexDir` that still fits the
 * segments, else from nothing, then every line after what it covers. A writer (`cut`) cuts a torn tail of the last
 * segment; a view leaves it and stops before it. Damage anywhere else is a `CorruptionError` naming the segment
 * and line; nothing is rewritten.
 */
export async function readLog(fs: FileSystem, logDir: string, indexDir: string, cut: boolean): Promise<OpenedLog> {
  const found = await listSegments(fs, logDir);
  const { segments, index } = (await loadIndexSnapshot(fs, indexDir, logDir, found)) ?? { segments: found, index: new StreamIndex() };
  for (const segment of segments) await catchUp(fs, index, segment, segment === segments.at(-1), cut);
  refuseGaps(index);
  return { segments, index };
}

/**
 * Scans `segment` from where the index left it to its end, applying each whole batch. The last segment's torn
 * tail is cut when `cut`, left for later otherwise (a view reading while the writer writes sees the same).
 */
export async function catchUp(fs: FileSystem, index: StreamIndex, segment: Segment, last: boolean, cut: boolean): Promise<void> {
  const result = await scanSegment(
    fs,
    segment,
    { offset: segment.size, line: segment.lines + 1 },
    {
      batch(records, at, line) {
        const broken = index.check(records);
        if (broken !== undefined) return broken;
        segment.mark((records[0] as { position: number }).position, at.offset, line);
        index.apply(records, at, { file: segment.path, line });
        return undefined;
      },
      blob(record) {
        index.applyBlob(record);
        return undefined;
      },
    },
  );
  segment.size = result.end;
  segment.lines = result.line - 1;
  const stop = result.stop;
  if (stop === undefined) return;
  if (!stop.torn || !last) throw new CorruptionError(segment.path, stop.damageLine, stop.reason);
  if (cut) await cutTail(fs, segment);
}

/** Throws for the first gap in a stream's revisions that no snapshot or deletion covers (see `StreamIndex.unresolvedGaps`). */
export function refuseGaps(index: StreamIndex): void {
  const [gap] = index.unresolvedGaps();
  if (gap !== undefined) throw new CorruptionError(gap.file, gap.line, `revision ${gap.revision} of ${gap.stream} does not follow revision ${gap.after}`);
}

/** Cuts the segment back to what the index holds and makes that durable. */
async function cutTail(fs: FileSystem, segment: Segment): Promise<void> {
  let fd: number | undefined;
  try {
    fd = await fs.open(segment.path, 'r+');
    await fs.ftruncate(fd, segment.size);
    await fs.fdatasync(fd);
  } catch (cause) {
    throw new StorageError(`@sessionfold/store-file: could not cut the torn tail of ${segment.path}.`, { cause });
  } finally {
    if (fd !== undefined) await fs.close(fd).catch(() => undefined);
  }
}

/**
 * Refuses a store whose own directories are links or not directories: files are created and opened inside them
 * by name, and O_NOFOLLOW guards only the last part of a path, so a linked `log/` would make writes land outside.
 */
export async function refuseLinkedDirectories(fs: FileSystem, dirs: readonly string[]): Promise<void> {
  for (const dir of dirs) {
    let stats: Awaited<ReturnType<FileSystem['lstat']>>;
    try {
      stats = await fs.lstat(dir);
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') continue;
      throw new StorageError(`@sessionfold/store-file: could not read ${dir}.`, { cause });
    }
    if (!stats.isDirectory()) {
      throw new StorageError(
        `@sessionfold/store-file: ${dir} is not a directory (a symbolic link or another kind of file); the store follows no link inside its directory. Nothing was changed.`,
      );
    }
  }
}

/** Creates `path` (0700) if missing, its name made durable; a failure names the directory. */
export async function createDirectory(fs: FileSystem, path: string): Promise<void> {
  try {
    await fs.mkdir(path, 0o700);
  } catch (cause) {
    throw new StorageError(`@sessionfold/store-file: could not create ${path}.`, { cause });
  }
}

/** Creates the log directory of a new store and makes its name durable. */
export async function createLogDirectory(fs: FileSystem, directory: string): Promise<string> {
  const logDir = join(directory, 'log');
  await createDirectory(fs, logDir);
  try {
    await syncDir(fs, directory);
  } catch (cause) {
    throw new StorageError(`@sessionfold/store-file: could not sync ${directory}.`, { cause });
  }
  return logDir;
}
