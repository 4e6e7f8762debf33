import { CorruptionError, type StreamId } from '@sessionfold/core/kernel';
import { readAll, readingFile, type FileSystem } from './fs-layer.js';
import { EVENT_IDS_NOT_READ, resumeJournal, scanJournal, type JournalInfo, type PositionClaims } from './journal-scan.js';
import type { Layout } from './layout.js';
import { stampOf, unchanged, type FileStamp, type ManifestStream } from './manifest.js';
import { readSnapshotFile } from './snapshot-file.js';
import type { ChangeMark } from './stream-files.js';

/** What opening learned of one stream's files. */
export interface LoadedStream {
  snapshot: ChangeMark | undefined;
  journal: JournalInfo | undefined;
  /** The journal's event ids were not read: the stream reads them before its first append. */
  idsPending: boolean;
  /** The files' stamps, taken before they were read (so never newer than what was read). */
  stamps: { snapshot?: FileStamp | undefined; journal?: FileStamp | undefined };
  /** Taken from the manifest's record as it is: no file of the stream was read. */
  unread: boolean;
}

/** Which of a stream's files the directory lists. */
export interface StreamFileNames {
  readonly journal: boolean;
  readonly snapshot: boolean;
}

/** How to load a stream: its files, whether torn tails are cut, and where the positions found are claimed. */
export interface StreamLoad {
  fs: FileSystem;
  layout: Layout;
  repair: boolean;
  positions: PositionClaims;
  /** The manifest's position: lines added after it must hold later ones. */
  manifestPosition: number;
  /**
   * The files are as the manifest recorded them (a clean close, and no writer since): a file recorded with a
   * known stamp is taken as it is, without looking at it.
   */
  trusted: boolean;
  /** The records are this load's own (decoded for it): they are used as they are, not copied. */
  owned: boolean;
  /** The stream was deleted after the manifest was recorded: its record describes files that are gone. */
  deletedSince(stream: StreamId): boolean;
}

/**
 * Loads a stream from what the manifest recorded of it when its files still match: a file whose size, inode
 * and time are as recorded is not read at all; a journal that grew is read from its last checkpoint on (that
 * part checked line by line, and found to continue what was recorded). Anything else — no record, a file
 * added, gone, replaced, shorter or rewritten, a snapshot that changed — is read in full as without a manifest.
 */
export async function loadStream(load: StreamLoad, stream: StreamId, names: StreamFileNames, record: ManifestStream | undefined): Promise<LoadedStream> {
  const recorded = record && (await fromRecord(load, stream, names, record));
  return recorded ?? scanStream(load, stream, names);
}

/** Reads a stream's snapshot and its whole journal, checking every line. */
async function scanStream({ fs, layout, repair, positions }: StreamLoad, stream: StreamId, names: StreamFileNames): Promise<LoadedStream> {
  const [snapshotPath, journalPath] = [layout.snapshot(stream), layout.journal(stream)];
  const stamps = {
    snapshot: names.snapshot ? await stampOf(fs, snapshotPath) : undefined,
    journal: names.journal ? await stampOf(fs, journalPath) : undefined,
  };
  const stored = names.snapshot ? await readingFile(snapshotPath, () => readSnapshotFile(fs, snapshotPath, stream)) : undefined;
  if (stored) positions.claim(stored.position, snapshotPath, 1);
  const from = stored?.snapshot.revision ?? 0;
  const journal = names.journal ? await readingFile(journalPath, () => scanJournal(fs, journalPath, stream, from, repair, positions)) : undefined;
  const snapshot = stored && { revision: stored.snapshot.revision, position: stored.position, recordedAt: stored.recordedAt };
  return { snapshot, journal, idsPending: false, stamps, unread: false };
}

/**
 * The stream as the manifest records it, without looking at its files, when the load trusts the manifest and
 * the record vouches for every file the directory lists (known stamps); undefined otherwise (see `loadStream`).
 */
export function takenAsRecorded(load: StreamLoad, names: StreamFileNames, record: ManifestStream): LoadedStream | undefined {
  if (!load.trusted || names.snapshot !== (record.snapshot !== undefined) || names.journal !== (record.journal !== undefined)) return undefined;
  if ((record.snapshot && !isKnown(record.snapshot.stamp)) || (record.journal && !isKnown(record.journal.stamp))) return undefined;
  const snapshot = record.snapshot?.mark;
  const stamps: LoadedStream['stamps'] = { snapshot: record.snapshot?.stamp, journal: record.journal?.stamp };
  if (!record.journal) return { snapshot, journal: undefined, idsPending: false, stamps, unread: true };
  return { snapshot, journal: recordedJournal(load, record.journal.info, record.journal.stamp.ino), idsPending: true, stamps, unread: true };
}

async function fromRecord(load: StreamLoad, stream: StreamId, names: StreamFileNames, record: ManifestStream): Promise<LoadedStream | undefined> {
  const { fs, layout } = load;
  const stamps: LoadedStream['stamps'] = {};
  let unread = true;
  if (names.snapshot !== (record.snapshot !== undefined) || names.journal !== (record.journal !== undefined)) return undefined;
  if (record.snapshot) {
    const path = layout.snapshot(stream);
    const now = await stampNow(load, path, record.snapshot.stamp);
    if (!now) return undefined;
    stamps.snapshot = now;
    if (!unchanged(now, record.snapshot.stamp)) {
      unread = false;
      // Another file (a copy of the directory, or a newer snapshot): small, so read it and see whether it is the one recorded.
      const stored = await readingFile(path, () => readSnapshotFile(fs, path, stream));
      const { mark } = record.snapshot;
      if (!stored || stored.snapshot.revision !== mark.revision || stored.position !== mark.position || stored.recordedAt !== mark.recordedAt) return undefined;
    }
  }
  const snapshot = record.snapshot?.mark;
  if (!record.journal) return { snapshot, journal: undefined, idsPending: false, stamps, unread };
  const path = layout.journal(stream);
  const now = await stampNow(load, path, record.journal.stamp);
  const recorded = record.journal.info.length;
  // A writer's load (a view takes files as they are) of the very file the manifest recorded, which records only
  // lengths that were fdatasynced: bytes of it that are gone or no longer records were acknowledged.
  const recordedFile = load.repair && now !== undefined && isKnown(record.journal.stamp) && now.ino === record.journal.stamp.ino && !load.deletedSince(stream);
  // Grown shorter: one that ends inside a line reads as a write cut short (cut at its last whole line, as the
  // format says); one that ends with whole lines has no such excuse, and a writer does not build on it.
  if (recordedFile && now.size < recorded && (await endsWithNewline(fs, path, now.size))) {
    throw new CorruptionError(
      path,
      undefined,
      `the journal holds ${now.size} bytes, short of the ${recorded} bytes the manifest records of it: it was cut or changed under the store`,
    );
  }
  if (!now || now.size < recorded) return undefined;
  stamps.journal = now;
  const info = record.journal.info;
  if (unchanged(now, record.journal.stamp)) {
    return { snapshot, journal: recordedJournal(load, info, now.ino), idsPending: true, stamps, unread };
  }
  const journal = await readingFile(path, () =>
    resumeJournal(fs, path, stream, snapshot?.revision ?? 0, load.repair, load.positions, info, load.manifestPosition),
  );
  if (journal === 'stale') throw new StaleManifestError(path);
  if (journal === undefined && recordedFile) {
    // No longer continuing what the manifest recorded: if its records now end before the length recorded and NUL
    // bytes fill the rest of it, acknowledged bytes were zeroed, which a writer does not cut off as a torn write.
    const whole = await readingFile(path, () => scanJournal(fs, path, stream, snapshot?.revision ?? 0, false, { claim: () => undefined }));
    if (whole && whole.length < info.length && (await allZero(fs, path, whole.length, info.length))) {
      throw new CorruptionError(
        path,
        whole.lines + 1,
        `the journal holds whole records only up to byte ${whole.length} of the ${info.length} the manifest records of it: it was changed under the store`,
      );
    }
  }
  return journal && { snapshot, journal, idsPending: true, stamps, unread: false };
}

/** The stamp of the file at `path`: the recorded one when the load trusts the manifest and it is known, else looked at. */
async function stampNow(load: StreamLoad, path: string, recorded: FileStamp): Promise<FileStamp | undefined> {
  return load.trusted && isKnown(recorded) ? recorded : stampOf(load.fs, path);
}

/** The recorded description of a journal whose file has inode `ino`, for the stream to use (and extend in place). */
function recordedJournal(load: StreamLoad, info: JournalInfo, ino: number): JournalInfo {
  // A record this load does not own is copied.
  const journal = load.owned ? info : { ...info, checkpoints: [...info.checkpoints], eventIds: EVENT_IDS_NOT_READ };
  journal.ino = ino;
  return journal;
}

/** A stamp recorded with the inode and time of the file it describes. */
function isKnown(stamp: FileStamp): boolean {
  return stamp.ino !== -1 && stamp.mtimeMs !== -1;
}

/**
 * A line written after the manifest holds a position that had settled before it: the manifest cannot explain
 * the files (a line copied or moved, or a manifest from elsewhere), so open reads every file as without one.
 */
export class StaleManifestError extends Error {
  constructor(path: string) {
    super(`${path} holds a line added after the manifest at a position settled before it`);
    this.name = 'StaleManifestError';
  }
}

/** The bytes `[from, to)` of the file at `path`, or undefined when the file ends before `to`. */
async function bytesOf(fsl: FileSystem, path: string, from: number, to: number): Promise<Buffer | undefined> {
  const fd = await fsl.open(path, 'r');
  try {
    const bytes = Buffer.alloc(to - from);
    return (await readAll(fsl, fd, bytes, from)) === bytes.length ? bytes : undefined;
  } finally {
    await fsl.close(fd).catch(() => undefined);
  }
}

/** The file's last byte is a newline (false for an empty file). */
async function endsWithNewline(fsl: FileSystem, path: string, size: number): Promise<boolean> {
  return size > 0 && (await bytesOf(fsl, path, size - 1, size))?.[0] === 0x0a;
}

/** Every byte of the file in `[from, to)` is NUL (and the file reaches `to`). */
async function allZero(fsl: FileSystem, path: string, from: number, to: number): Promise<boolean> {
  return (await bytesOf(fsl, path, from, to))?.every((byte) => byte === 0) ?? false;
}
