import { CorruptionError, StorageError } from '@sessionfold/core/kernel';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { syncDir, unlinkIfPresent, writeAll, type FileSystem } from './fs-layer.js';
import { asEventLine } from './journal-codec.js';
import { startPoint } from './journal-events.js';
import { CHUNK_BYTES, LineReader } from './journal-reader.js';
import { emptyJournal, type JournalInfo } from './journal-scan.js';
import type { StoreContext, StreamEntry } from './stream-entry.js';

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

/**
 * After the snapshot is durable: drops the lines it covers. The live range moves past them at once; the file
 * is then rewritten as a fresh temporary sibling holding only the kept bytes (fsynced), renamed over the
 * journal, and the directory fsynced. A crash at any point leaves the old journal or the new one, and with
 * the snapshot in place both read the same.
 */
export async function compactJournal(ctx: StoreContext, entry: StreamEntry, path: string, cut: Cut, snapshotRevision: number): Promise<void> {
  const journal = entry.journal;
  journal.liveOffset = cut.offset;
  journal.liveLine = cut.line;
  journal.firstPosition = cut.position;
  const later = journal.checkpoints.filter((checkpoint) => checkpoint.offset > cut.offset);
  journal.checkpoints = cut.position === 0 ? [] : [{ revision: cut.revision, position: cut.position, offset: cut.offset, line: cut.line }, ...later];
  if (cut.position === 0) journal.lastPosition = 0;
  if (cut.offset === 0) return;
  const { fs } = ctx;
  await entry.closeFile();
  if (cut.position === 0) {
    await guard(path, () => unlinkIfPresent(fs, path));
    const kept = emptyJournal(snapshotRevision);
    kept.maxPosition = journal.maxPosition;
    entry.journal = kept;
    entry.journalExists = false;
    entry.generation++;
    await syncDirOrPoison(ctx, path);
    return;
  }
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  await guard(path, async () => {
    const from = await fs.open(path, 'r');
    let to: number | undefined;
    try {
      to = await fs.open(temp, 'wx', 0o600);
      const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, journal.length - cut.offset));
      for (let at = cut.offset; at < journal.length; ) {
        const n = await fs.read(from, buffer, 0, Math.min(buffer.length, journal.length - at), at);
        if (n === 0) throw new CorruptionError(path, undefined, `the journal ended at byte ${at}, before ${journal.length}`);
        await writeAll(fs, to, buffer.subarray(0, n), at - cut.offset);
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
      await fs.close(from).catch(() => undefined);
    }
  });
  const shift = cut.offset;
  const lineShift = cut.line - 1;
  journal.length -= shift;
  journal.lines -= lineShift;
  journal.liveOffset = 0;
  journal.liveLine = 1;
  journal.checkpoints = journal.checkpoints.map((c) => ({ ...c, offset: c.offset - shift, line: c.line - lineShift }));
  entry.generation++;
  await syncDirOrPoison(ctx, path);
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
    ctx.poison();
    throw new StorageError(`@sessionfold/store-file: could not sync the directory of ${path}; reopen the store.`, { cause, poisoned: true });
  }
}
