import { temporarySibling } from '@sessionfold/atomic-write';
import { CorruptionError, StorageError } from '@sessionfold/core/kernel';
import { dirname } from 'node:path';
import { syncDir, unlinkIfPresent, writeAll, type FileSystem } from './fs-layer.js';
import { asEventLine } from './journal-codec.js';
import { startPoint } from './journal-events.js';
import { CHUNK_BYTES, LineReader } from './journal-reader.js';
import { emptyJournal, type JournalInfo } from './journal-scan.js';
import type { StoreContext, StreamEntry } from './stream-entry.js';
import { StreamFiles } from './stream-files.js';

/** The first line a compaction keeps: its offset, 1-based line and position (0 when nothing is kept). */
export interface Cut {
  offset: number;
  line: number;
  revision: number;
  position: number;
}

/** Finds the first committed line with revision ≥ `revision`, starting from the nearest checkpoint. */
export async function locateRevision(fsl: FileSystem, path: string, journal: JournalInfo, revision: number): Promise<Cut> {
  const end: Cut = { offset: journal.length, line: journal.lines + 1, revision, position: 0 };
  if (journal.firstPosition === 0) return end;
  const start = startPoint(journal, 'revision', revision);
  const fd = await fsl.open(path, 'r');
  try {
    const reader = new LineReader(fsl, fd, path, start.offset, journal.length, start.line);
    for (let lines = await reader.next(); lines; lines = await reader.next()) {
      for (const line of lines) {
        const event = asEventLine(line.value);
        if (typeof event === 'string') throw new CorruptionError(path, line.no, event);
        if (event.revision >= revision) return { offset: line.offset, line: line.no, revision: event.revision, position: event.position };
      }
    }
  } finally {
    await fsl.close(fd);
  }
  return end;
}

/** The journal as it reads once a snapshot covers the lines before `cut`: same file, live range moved past them. */
export function liveFrom(journal: JournalInfo, cut: Cut): JournalInfo {
  const later = journal.checkpoints.filter((checkpoint) => checkpoint.offset > cut.offset);
  return {
    ...journal,
    liveOffset: cut.offset,
    liveLine: cut.line,
    firstPosition: cut.position,
    lastPosition: cut.position === 0 ? 0 : journal.lastPosition,
    checkpoints: cut.position === 0 ? [] : [{ revision: cut.revision, position: cut.position, offset: cut.offset, line: cut.line }, ...later],
  };
}

/**
 * After the snapshot is durable and current (its journal already read from `cut`): rewrites the file as a
 * fresh temporary sibling holding only the kept bytes (fsynced), renamed over the journal, and the directory
 * fsynced. A crash at any point leaves the old journal or the new one, and with the snapshot in place both
 * read the same. The version being replaced is retired first, so readers that started on it finish on it.
 */
export async function compactJournal(ctx: StoreContext, entry: StreamEntry, path: string, cut: Cut, snapshotRevision: number): Promise<void> {
  if (cut.offset === 0) return;
  const { fs } = ctx;
  const current = entry.files;
  const journal = current.journal;
  await entry.closeFile();
  await current.retire(fs, path, ctx.layout.snapshot(entry.name));
  let next: StreamFiles;
  try {
    if (cut.position === 0) {
      await guard(path, () => unlinkIfPresent(fs, path));
      next = new StreamFiles(current.snapshot, { ...emptyJournal(snapshotRevision), maxPosition: journal.maxPosition }, current.since);
    } else {
      await guard(path, () => rewrite(fs, path, journal, cut.offset));
      const shift = cut.offset;
      const lineShift = cut.line - 1;
      next = new StreamFiles(
        current.snapshot,
        {
          ...journal,
          length: journal.length - shift,
          lines: journal.lines - lineShift,
          liveOffset: 0,
          liveLine: 1,
          checkpoints: journal.checkpoints.map((c) => ({ ...c, offset: c.offset - shift, line: c.line - lineShift })),
        },
        current.since,
      );
    }
  } catch (error) {
    entry.useFiles(current.unretired());
    current.release();
    throw error;
  }
  next.takeHeldFrom(current);
  entry.useFiles(next, cut.position !== 0);
  current.release();
  await syncDirOrPoison(ctx, path);
}

/** Writes the journal's bytes from `from` on into a temporary sibling, fsyncs it and renames it over `path`. */
async function rewrite(fs: FileSystem, path: string, journal: JournalInfo, from: number): Promise<void> {
  const temp = temporarySibling(path);
  const source = await fs.open(path, 'r');
  let to: number | undefined;
  try {
    to = await fs.open(temp, 'wx', 0o600);
    const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, journal.length - from));
    for (let at = from; at < journal.length; ) {
      const n = await fs.read(source, buffer, 0, Math.min(buffer.length, journal.length - at), at);
      if (n === 0) throw new CorruptionError(path, undefined, `the journal ended at byte ${at}, before ${journal.length}`);
      await writeAll(fs, to, buffer.subarray(0, n), at - from);
      at += n;
    }
    await fs.fsync(to);
    await fs.close(to);
    to = undefined;
    await fs.rename(temp, path);
  } catch (error) {
    if (to !== undefined) await fs.close(to).catch(() => undefined);
    await unlinkIfPresent(fs, temp).catch(() => undefined);
    throw error;
  } finally {
    await fs.close(source).catch(() => undefined);
  }
}

async function guard<T>(path: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (cause) {
    if (cause instanceof CorruptionError) throw cause;
    throw new StorageError(`@sessionfold/store-file: could not rewrite ${path} after compaction; the snapshot is in place.`, { cause });
  }
}

async function syncDirOrPoison(ctx: StoreContext, path: string): Promise<void> {
  try {
    await syncDir(ctx.fs, dirname(path));
  } catch (cause) {
    ctx.poison(`the directory of ${path} failed to sync`, cause);
    throw new StorageError(`@sessionfold/store-file: could not sync the directory of ${path}; reopen the store.`, { cause, poisoned: true });
  }
}
