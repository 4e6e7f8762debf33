import { validateStreamId, type StreamId } from '@sessionfold/core/kernel';
import { EVENT_IDS_NOT_READ, type Checkpoint, type JournalInfo } from './journal-scan.js';
import type { ChangeMark } from './stream-files.js';

/**
 * How a file looked when the manifest recorded it: size, inode and modification time. Inode and time are -1
 * when they were not known to match the recorded content (the file was growing, or the file system does not
 * give them); such a file is always read again.
 */
export interface FileStamp {
  size: number;
  ino: number;
  mtimeMs: number;
}

/** A stamp no file matches: the file is read at open. */
export const UNKNOWN_STAMP: FileStamp = { size: -1, ino: -1, mtimeMs: -1 };

/** What the manifest holds of one stream's files. */
export interface ManifestStream {
  snapshot?: { mark: ChangeMark; stamp: FileStamp };
  /** The journal as open would describe it, without event ids (read on the stream's first append). */
  journal?: { info: JournalInfo; stamp: FileStamp };
}

/** One snapshot's row: revision, position, recordedAt and the file's stamp. */
type SnapshotRow = [row: number, revision: number, position: number, recordedAt: string, size: number, ino: number, mtimeMs: number];

/**
 * Numbers of a journal's row, in this order (`JOURNAL_FIELDS` per stream): length (-1: no journal), last
 * revision, max position, live offset, live line, first and last position, lines, inode, time, checkpoints.
 */
const JOURNAL_FIELDS = 11;
const HASH_CHARS = 64;
/** Stands for "no checksum" (a journal with no line, or no journal) in the run of checksums. */
const NO_HASH = '-'.repeat(HASH_CHARS);

/** The manifest's columns as they are written: one entry per stream in each, rows aligned by index. */
export interface ManifestColumns {
  streams: StreamId[];
  journals: number[];
  /** Revision, position, offset and line of every checkpoint, each journal's in a run, in the order of the rows. */
  checkpoints: number[];
  /** Each stream's last line checksum, 64 hex characters (`-` for none), in one string: one value, not one per stream. */
  hashes: string;
  snapshots: SnapshotRow[];
}

/**
 * Builds the columns of a manifest stream by stream: from a stream's description, or copied from the row of a
 * table (a stream nothing changed since it was read from the manifest, so nothing is built for it).
 */
export class ManifestBuilder {
  readonly #columns: ManifestColumns = { streams: [], journals: [], checkpoints: [], hashes: '', snapshots: [] };
  readonly #hashes: string[] = [];

  /** Adds `stream` as `record` describes it; the journal's stamp must describe `info.length` bytes to be kept. */
  add(stream: StreamId, record: ManifestStream): void {
    const { streams, journals, checkpoints, snapshots } = this.#columns;
    const row = streams.length;
    streams.push(stream);
    const { snapshot, journal } = record;
    if (snapshot) {
      const { mark, stamp } = snapshot;
      snapshots.push([row, mark.revision, mark.position, mark.recordedAt, stamp.size, stamp.ino, stamp.mtimeMs]);
    }
    if (!journal) {
      journals.push(-1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
      this.#hashes.push(NO_HASH);
      return;
    }
    const { info, stamp } = journal;
    // A journal's recorded stamp always describes `length` bytes: the size is not stored twice.
    const known = stamp.size === info.length;
    journals.push(
      info.length,
      info.lastRevision,
      info.maxPosition,
      info.liveOffset,
      info.liveLine,
      info.firstPosition,
      info.lastPosition,
      info.lines,
      known ? stamp.ino : -1,
      known ? stamp.mtimeMs : -1,
      info.checkpoints.length,
    );
    for (const c of info.checkpoints) checkpoints.push(c.revision, c.position, c.offset, c.line);
    this.#hashes.push(info.lastHash === '' ? NO_HASH : info.lastHash);
  }

  /** Adds row `row` of `table` as it is. */
  copy(table: ManifestTable, row: number): void {
    table.copyRowTo(row, this.#columns, this.#hashes);
  }

  /** The columns built so far. */
  columns(): ManifestColumns {
    return { ...this.#columns, hashes: this.#hashes.join('') };
  }
}

/**
 * A decoded manifest kept as its columns: opening a store of many streams builds no object per stream from it;
 * a stream's description is made when it is first needed (`record`, `journalInfo`).
 */
export class ManifestTable {
  readonly #names: readonly StreamId[];
  readonly #rows: Map<StreamId, number>;
  readonly #journals: readonly number[];
  readonly #checkpoints: readonly number[];
  /** Where each row's checkpoints start in `#checkpoints`, and where the last row's end. */
  readonly #checkpointStart: Float64Array;
  readonly #hashes: string;
  readonly #snapshots: Map<number, { mark: ChangeMark; stamp: FileStamp }>;

  private constructor(
    columns: ManifestColumns,
    rows: Map<StreamId, number>,
    checkpointStart: Float64Array,
    snapshots: Map<number, { mark: ChangeMark; stamp: FileStamp }>,
  ) {
    this.#names = columns.streams;
    this.#journals = columns.journals;
    this.#checkpoints = columns.checkpoints;
    this.#hashes = columns.hashes;
    this.#rows = rows;
    this.#checkpointStart = checkpointStart;
    this.#snapshots = snapshots;
  }

  /**
   * The table of `value` (parsed JSON columns), or undefined when anything in it is out of range: every row is
   * checked here, so a table once made never fails a stream later. Throws on a stream id that is not valid.
   */
  static from(value: Record<string, unknown>): ManifestTable | undefined {
    const { streams, journals, checkpoints, hashes, snapshots } = value;
    if (!Array.isArray(streams) || !Array.isArray(journals) || !Array.isArray(checkpoints) || typeof hashes !== 'string' || !Array.isArray(snapshots)) {
      return undefined;
    }
    const count = streams.length;
    if (journals.length !== count * JOURNAL_FIELDS || hashes.length !== count * HASH_CHARS || checkpoints.length % 4 !== 0) return undefined;
    if (!validHashRun(hashes)) return undefined;
    const rows = new Map<StreamId, number>();
    const checkpointStart = new Float64Array(count + 1);
    let nextCheckpoint = 0;
    for (let row = 0; row < count; row++) {
      const stream: unknown = streams[row];
      if (typeof stream !== 'string' || rows.has(stream)) return undefined;
      validateStreamId(stream);
      rows.set(stream, row);
      checkpointStart[row] = nextCheckpoint;
      const at = row * JOURNAL_FIELDS;
      const length: unknown = journals[at];
      if (length === -1) {
        if (hashes.charCodeAt(row * HASH_CHARS) !== DASH) return undefined;
        continue;
      }
      if (!validJournal(journals, at)) return undefined;
      const from = nextCheckpoint;
      nextCheckpoint += 4 * (journals[at + 10] as number);
      if (nextCheckpoint > checkpoints.length) return undefined;
      for (let i = from; i < nextCheckpoint; i += 4) {
        if (!isCount(checkpoints[i]) || !isCount(checkpoints[i + 1]) || !isCount(checkpoints[i + 2]) || !isCount(checkpoints[i + 3])) return undefined;
        if ((checkpoints[i + 2] as number) >= (length as number)) return undefined;
      }
    }
    checkpointStart[count] = nextCheckpoint;
    if (nextCheckpoint !== checkpoints.length) return undefined;
    const snapshotsByRow = new Map<number, { mark: ChangeMark; stamp: FileStamp }>();
    for (const entry of snapshots as unknown[]) {
      const snapshot = asSnapshot(entry, count);
      if (!snapshot || snapshotsByRow.has(snapshot.row)) return undefined;
      snapshotsByRow.set(snapshot.row, snapshot.record);
    }
    return new ManifestTable(value as unknown as ManifestColumns, rows, checkpointStart, snapshotsByRow);
  }

  /** Streams the table records. */
  get size(): number {
    return this.#names.length;
  }

  /** The row of `stream`, or -1 when the table does not record it. */
  row(stream: StreamId): number {
    return this.#rows.get(stream) ?? -1;
  }

  /** The stream's description as a `Map` of records would give it (made now, the caller's own), or undefined. */
  get(stream: StreamId): ManifestStream | undefined {
    const row = this.row(stream);
    return row === -1 ? undefined : this.record(row);
  }

  /** Row `row`'s description, made now (the caller's own). */
  record(row: number): ManifestStream {
    const record: ManifestStream = {};
    const snapshot = this.#snapshots.get(row);
    if (snapshot) record.snapshot = { mark: { ...snapshot.mark }, stamp: { ...snapshot.stamp } };
    if (this.hasJournal(row)) record.journal = { info: this.journalInfo(row, 0), stamp: this.journalStamp(row) };
    return record;
  }

  hasJournal(row: number): boolean {
    return (this.#journals[row * JOURNAL_FIELDS] as number) !== -1;
  }

  /** The recorded snapshot's change, if the row has one. */
  snapshotMark(row: number): ChangeMark | undefined {
    return this.#snapshots.get(row)?.mark;
  }

  /** True when every file the row records has a known stamp (inode and time): the files may be taken as recorded. */
  stampsKnown(row: number): boolean {
    const at = row * JOURNAL_FIELDS;
    const journalKnown = this.#journals[at] === -1 || (this.#journals[at + 8] !== -1 && this.#journals[at + 9] !== -1);
    const snapshot = this.#snapshots.get(row);
    return journalKnown && (!snapshot || (snapshot.stamp.ino !== -1 && snapshot.stamp.mtimeMs !== -1));
  }

  /** The revision the stream is at: its journal's last, else its snapshot's. */
  revision(row: number): number {
    const snapshotRevision = this.#snapshots.get(row)?.mark.revision ?? 0;
    return this.hasJournal(row) ? Math.max(this.#journals[row * JOURNAL_FIELDS + 1] as number, snapshotRevision) : snapshotRevision;
  }

  /** The largest position the row's files hold. */
  maxPosition(row: number): number {
    const at = row * JOURNAL_FIELDS;
    const journal = this.#journals[at] === -1 ? 0 : (this.#journals[at + 2] as number);
    return Math.max(journal, this.#snapshots.get(row)?.mark.position ?? 0);
  }

  /** The journal's recorded stamp (size: its length). */
  journalStamp(row: number): FileStamp {
    const at = row * JOURNAL_FIELDS;
    return { size: this.#journals[at] as number, ino: this.#journals[at + 8] as number, mtimeMs: this.#journals[at + 9] as number };
  }

  /** The journal's description, made now (the caller's own), for a file with inode `ino`. Only for a row with a journal. */
  journalInfo(row: number, ino: number): JournalInfo {
    const j = this.#journals;
    const at = row * JOURNAL_FIELDS;
    const from = this.#checkpointStart[row] as number;
    const to = this.#checkpointStart[row + 1] as number;
    const checkpoints: Checkpoint[] = new Array((to - from) / 4);
    for (let i = from; i < to; i += 4) {
      const c = this.#checkpoints;
      checkpoints[(i - from) / 4] = { revision: c[i] as number, position: c[i + 1] as number, offset: c[i + 2] as number, line: c[i + 3] as number };
    }
    const hash = this.#hashes.slice(row * HASH_CHARS, (row + 1) * HASH_CHARS);
    // Built as `emptyJournal` builds it (same fields, same order).
    return {
      length: j[at] as number,
      lastRevision: j[at + 1] as number,
      maxPosition: j[at + 2] as number,
      liveOffset: j[at + 3] as number,
      liveLine: j[at + 4] as number,
      firstPosition: j[at + 5] as number,
      lastPosition: j[at + 6] as number,
      lines: j[at + 7] as number,
      checkpoints,
      eventIds: EVENT_IDS_NOT_READ,
      tornBytes: 0,
      ino,
      lastHash: hash === NO_HASH ? '' : hash,
    };
  }

  /** The latest position the row's files hold, or its journal's last live line: where the stream last changed. */
  lastChangePosition(row: number): number {
    const at = row * JOURNAL_FIELDS;
    const journal = this.#journals[at] === -1 ? 0 : Math.max(this.#journals[at + 2] as number, this.#journals[at + 6] as number);
    return Math.max(journal, this.#snapshots.get(row)?.mark.position ?? 0);
  }

  /** Appends row `row` to `columns` (with its checksum in `hashes`), as `ManifestBuilder.copy` does. */
  copyRowTo(row: number, columns: ManifestColumns, hashes: string[]): void {
    const target = columns.streams.length;
    columns.streams.push(this.#names[row] as StreamId);
    const at = row * JOURNAL_FIELDS;
    for (let i = at; i < at + JOURNAL_FIELDS; i++) columns.journals.push(this.#journals[i] as number);
    const to = this.#checkpointStart[row + 1] as number;
    for (let i = this.#checkpointStart[row] as number; i < to; i++) columns.checkpoints.push(this.#checkpoints[i] as number);
    hashes.push(this.#hashes.slice(row * HASH_CHARS, (row + 1) * HASH_CHARS));
    const snapshot = this.#snapshots.get(row);
    if (snapshot) {
      const { mark, stamp } = snapshot;
      columns.snapshots.push([target, mark.revision, mark.position, mark.recordedAt, stamp.size, stamp.ino, stamp.mtimeMs]);
    }
  }
}

const DASH = 0x2d;

/** True when each checksum of the run is 64 lowercase hex characters, or 64 dashes for none (checked by hand: a regular expression would backtrack per checksum). */
function validHashRun(hashes: string): boolean {
  for (let start = 0; start < hashes.length; start += HASH_CHARS) {
    const none = hashes.charCodeAt(start) === DASH;
    for (let i = start; i < start + HASH_CHARS; i++) {
      const code = hashes.charCodeAt(i);
      if (none ? code !== DASH : !((code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x66))) return false;
    }
  }
  return true;
}

/** The numbers of a journal's row at `at`, checked as a description of a journal. */
function validJournal(j: readonly unknown[], at: number): boolean {
  for (let i = at; i < at + 8; i++) if (!isCount(j[i])) return false;
  if (!isCount(j[at + 10])) return false;
  const ino = j[at + 8];
  const mtimeMs = j[at + 9];
  if (typeof ino !== 'number' || typeof mtimeMs !== 'number' || !Number.isFinite(mtimeMs)) return false;
  const length = j[at] as number;
  // liveOffset ≤ length, lastPosition ≤ maxPosition.
  return (j[at + 3] as number) <= length && (j[at + 6] as number) <= (j[at + 2] as number);
}

function asSnapshot(entry: unknown, rows: number): { row: number; record: { mark: ChangeMark; stamp: FileStamp } } | undefined {
  if (!Array.isArray(entry) || entry.length !== 7) return undefined;
  const [row, revision, position, recordedAt, size, ino, mtimeMs] = entry as unknown[];
  if (!isCount(row) || row >= rows || !isCount(revision) || revision < 1 || !isCount(position) || position < 1 || typeof recordedAt !== 'string')
    return undefined;
  if (!isCount(size) || typeof ino !== 'number' || typeof mtimeMs !== 'number' || !Number.isFinite(mtimeMs)) return undefined;
  return { row, record: { mark: { revision, position, recordedAt }, stamp: { size, ino, mtimeMs } } };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
