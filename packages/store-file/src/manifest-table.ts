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
 * Whole numbers of a journal's row, in this order (`JOURNAL_FIELDS` per stream): length (-1: no journal), last
 * revision, max position, live offset, live line, first and last position, lines, checkpoints.
 */
const JOURNAL_FIELDS = 9;
/** Bytes of a row's stamp (inode and time, two little-endian doubles) and of its checksum (sha256; zeros: none). */
const STAMP_BYTES = 16;
const HASH_BYTES = 32;
const NO_HASH_HEX = '0'.repeat(2 * HASH_BYTES);

/**
 * The manifest's columns as they are written: one entry per stream in each, rows aligned by index. Stamps and
 * checksums are base64 strings of fixed-size binary rows: one value each however many streams, and times kept
 * exactly without decimal digits to parse.
 */
export interface ManifestColumns {
  streams: StreamId[];
  journals: number[];
  /** Revision, position, offset and line of every checkpoint, each journal's in a run, in the order of the rows. */
  checkpoints: number[];
  stamps: string;
  hashes: string;
  snapshots: SnapshotRow[];
}

/** A builder's columns, as `ManifestTable.copyRow` appends to them (stamps as numbers, checksums in hex). */
interface RowSink {
  journals: number[];
  checkpoints: number[];
  stamps: number[];
  hashes: string[];
  snapshots: SnapshotRow[];
}

/**
 * Builds the columns of a manifest stream by stream: from a stream's description, or copied from the row of a
 * table (a stream nothing changed since it was read from the manifest).
 */
export class ManifestBuilder {
  readonly #streams: StreamId[] = [];
  readonly #journals: number[] = [];
  readonly #checkpoints: number[] = [];
  readonly #snapshots: SnapshotRow[] = [];
  /** Inode and time of each row. */
  readonly #stamps: number[] = [];
  /** Each row's checksum in hex. */
  readonly #hashes: string[] = [];

  /** Adds `stream` as `record` describes it; the journal's stamp must describe `info.length` bytes to be kept. */
  add(stream: StreamId, record: ManifestStream): void {
    const row = this.#streams.length;
    this.#streams.push(stream);
    const { snapshot, journal } = record;
    if (snapshot) {
      const { mark, stamp } = snapshot;
      this.#snapshots.push([row, mark.revision, mark.position, mark.recordedAt, stamp.size, stamp.ino, stamp.mtimeMs]);
    }
    if (!journal) {
      this.#journals.push(-1, 0, 0, 0, 0, 0, 0, 0, 0);
      this.#stamps.push(0, 0);
      this.#hashes.push(NO_HASH_HEX);
      return;
    }
    const { info, stamp } = journal;
    // A journal's recorded stamp always describes `length` bytes: the size is not stored twice.
    const known = stamp.size === info.length;
    this.#journals.push(
      info.length,
      info.lastRevision,
      info.maxPosition,
      info.liveOffset,
      info.liveLine,
      info.firstPosition,
      info.lastPosition,
      info.lines,
      info.checkpoints.length,
    );
    this.#stamps.push(known ? stamp.ino : -1, known ? stamp.mtimeMs : -1);
    for (const c of info.checkpoints) this.#checkpoints.push(c.revision, c.position, c.offset, c.line);
    this.#hashes.push(info.lastHash === '' ? NO_HASH_HEX : info.lastHash);
  }

  /** Adds row `row` of `table` as it is, value by value (no description of the stream is made). */
  copy(table: ManifestTable, row: number): void {
    const at = this.#streams.length;
    this.#streams.push(table.name(row));
    table.copyRow(row, at, {
      journals: this.#journals,
      checkpoints: this.#checkpoints,
      stamps: this.#stamps,
      hashes: this.#hashes,
      snapshots: this.#snapshots,
    });
  }

  /** The columns built so far. */
  columns(): ManifestColumns {
    const stamps = Buffer.alloc(this.#stamps.length * 8);
    for (let i = 0; i < this.#stamps.length; i++) stamps.writeDoubleLE(this.#stamps[i] as number, i * 8);
    return {
      streams: this.#streams,
      journals: this.#journals,
      checkpoints: this.#checkpoints,
      stamps: stamps.toString('base64'),
      hashes: Buffer.from(this.#hashes.join(''), 'hex').toString('base64'),
      snapshots: this.#snapshots,
    };
  }
}

/**
 * A decoded manifest kept as its columns: opening a store of many streams builds no object per stream from it;
 * a stream's description is made when it is first needed (`record`, `journalInfo`).
 */
export class ManifestTable {
  readonly #names: readonly StreamId[];
  /** Row of each stream, made on the first look-up by name (`row`): a trusted open goes through the rows in order. */
  #rows: Map<StreamId, number> | undefined;
  readonly #journals: readonly number[];
  readonly #checkpoints: readonly number[];
  /** Where each row's checkpoints start in `#checkpoints`, and where the last row's end. */
  readonly #checkpointStart: Float64Array;
  readonly #stamps: Buffer;
  readonly #hashes: Buffer;
  readonly #snapshots: Map<number, { mark: ChangeMark; stamp: FileStamp }>;

  private constructor(
    names: StreamId[],
    journals: number[],
    checkpoints: number[],
    binary: { stamps: Buffer; hashes: Buffer; checkpointStart: Float64Array },
    snapshots: Map<number, { mark: ChangeMark; stamp: FileStamp }>,
  ) {
    this.#names = names;
    this.#journals = journals;
    this.#checkpoints = checkpoints;
    this.#stamps = binary.stamps;
    this.#hashes = binary.hashes;
    this.#checkpointStart = binary.checkpointStart;
    this.#snapshots = snapshots;
  }

  /**
   * The table of `value` (parsed JSON columns), or undefined when anything in it is out of range: every row is
   * checked here, so a table once made never fails a stream later. Stream ids are checked, but not that each is
   * listed once: a trusted open finds a repeated one (see `StaleManifestError`), and the look-up by name here.
   * Throws on a stream id that is not valid.
   */
  static from(value: Record<string, unknown>): ManifestTable | undefined {
    const { streams, journals, checkpoints, stamps, hashes, snapshots } = value;
    if (!Array.isArray(streams) || !Array.isArray(journals) || !Array.isArray(checkpoints) || !Array.isArray(snapshots)) return undefined;
    if (typeof stamps !== 'string' || typeof hashes !== 'string') return undefined;
    const count = streams.length;
    const stampBytes = Buffer.from(stamps, 'base64');
    const hashBytes = Buffer.from(hashes, 'base64');
    if (journals.length !== count * JOURNAL_FIELDS || stampBytes.length !== count * STAMP_BYTES || hashBytes.length !== count * HASH_BYTES) return undefined;
    if (checkpoints.length % 4 !== 0) return undefined;
    const checkpointStart = new Float64Array(count + 1);
    let nextCheckpoint = 0;
    for (let row = 0; row < count; row++) {
      const stream: unknown = streams[row];
      if (typeof stream !== 'string') return undefined;
      validateStreamId(stream);
      checkpointStart[row] = nextCheckpoint;
      const at = row * JOURNAL_FIELDS;
      const length: unknown = journals[at];
      if (length === -1) continue;
      if (!validJournal(journals, at)) return undefined;
      if (!Number.isFinite(stampBytes.readDoubleLE(row * STAMP_BYTES)) || !Number.isFinite(stampBytes.readDoubleLE(row * STAMP_BYTES + 8))) return undefined;
      const from = nextCheckpoint;
      nextCheckpoint += 4 * (journals[at + 8] as number);
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
    return new ManifestTable(
      streams as StreamId[],
      journals as number[],
      checkpoints as number[],
      { stamps: stampBytes, hashes: hashBytes, checkpointStart },
      snapshotsByRow,
    );
  }

  /** Streams the table records (rows). */
  get size(): number {
    return this.#names.length;
  }

  /** The stream of row `row`. */
  name(row: number): StreamId {
    return this.#names[row] as StreamId;
  }

  /** The row of `stream`, or -1 when the table does not record it (or records it more than once). */
  row(stream: StreamId): number {
    if (!this.#rows) {
      this.#rows = new Map();
      for (let row = 0; row < this.#names.length; row++) {
        const name = this.#names[row] as StreamId;
        this.#rows.set(name, this.#rows.has(name) ? -1 : row);
      }
    }
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

  /**
   * Appends row `row`'s values to `columns` (a builder's, whose next row is `at`) exactly as `ManifestBuilder.add`
   * would write them from `record(row)`: a stream copied unchanged into the next manifest.
   */
  copyRow(row: number, at: number, columns: RowSink): void {
    const from = row * JOURNAL_FIELDS;
    for (let i = from; i < from + JOURNAL_FIELDS; i++) columns.journals.push(this.#journals[i] as number);
    const end = this.#checkpointStart[row + 1] as number;
    for (let i = this.#checkpointStart[row] as number; i < end; i++) columns.checkpoints.push(this.#checkpoints[i] as number);
    columns.stamps.push(this.#stamps.readDoubleLE(row * STAMP_BYTES), this.#stamps.readDoubleLE(row * STAMP_BYTES + 8));
    columns.hashes.push(this.#hashes.toString('hex', row * HASH_BYTES, (row + 1) * HASH_BYTES));
    const snapshot = this.#snapshots.get(row);
    if (snapshot) {
      const { mark, stamp } = snapshot;
      columns.snapshots.push([at, mark.revision, mark.position, mark.recordedAt, stamp.size, stamp.ino, stamp.mtimeMs]);
    }
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
    const at = row * STAMP_BYTES;
    const journalKnown = !this.hasJournal(row) || (this.#stamps.readDoubleLE(at) !== -1 && this.#stamps.readDoubleLE(at + 8) !== -1);
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
    const journal = this.hasJournal(row) ? (this.#journals[row * JOURNAL_FIELDS + 2] as number) : 0;
    return Math.max(journal, this.#snapshots.get(row)?.mark.position ?? 0);
  }

  /** The latest position the row's files hold, or its journal's last live line: where the stream last changed. */
  lastChangePosition(row: number): number {
    const at = row * JOURNAL_FIELDS;
    const journal = this.hasJournal(row) ? Math.max(this.#journals[at + 2] as number, this.#journals[at + 6] as number) : 0;
    return Math.max(journal, this.#snapshots.get(row)?.mark.position ?? 0);
  }

  /** The journal's recorded stamp (size: its length). */
  journalStamp(row: number): FileStamp {
    const at = row * STAMP_BYTES;
    return { size: this.#journals[row * JOURNAL_FIELDS] as number, ino: this.#stamps.readDoubleLE(at), mtimeMs: this.#stamps.readDoubleLE(at + 8) };
  }

  /** The journal's description, made now (the caller's own), for a file with inode `ino`. Only for a row with a journal. */
  journalInfo(row: number, ino: number): JournalInfo {
    const j = this.#journals;
    const c = this.#checkpoints;
    const at = row * JOURNAL_FIELDS;
    const from = this.#checkpointStart[row] as number;
    const to = this.#checkpointStart[row + 1] as number;
    const checkpoints: Checkpoint[] = new Array((to - from) / 4);
    for (let i = from; i < to; i += 4) {
      checkpoints[(i - from) / 4] = { revision: c[i] as number, position: c[i + 1] as number, offset: c[i + 2] as number, line: c[i + 3] as number };
    }
    const hash = this.#hashes.toString('hex', row * HASH_BYTES, (row + 1) * HASH_BYTES);
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
      lastHash: hash === NO_HASH_HEX ? '' : hash,
    };
  }
}

/** The whole numbers of a journal's row at `at`, checked as a description of a journal. */
function validJournal(j: readonly unknown[], at: number): boolean {
  for (let i = at; i < at + JOURNAL_FIELDS; i++) if (!isCount(j[i])) return false;
  const length = j[at] as number;
  // liveOffset ≤ length, lastPosition ≤ maxPosition.
  return (j[at + 3] as number) <= length && (j[at + 6] as number) <= (j[at + 2] as number);
}

function asSnapshot(entry: unknown, rows: number): { row: number; record: { mark: ChangeMark; stamp: FileStamp } } | undefined {
  if (!Array.isArray(entry) || entry.length !== 7) return undefined;
  const [row, revision, position, recordedAt, size, ino, mtimeMs] = entry as unknown[];
  if (!isCount(row) || row >= rows || !isCount(revision) || revision < 1 || !isCount(position) || position < 1 || typeof recordedAt !== 'string') {
    return undefined;
  }
  if (!isCount(size) || typeof ino !== 'number' || typeof mtimeMs !== 'number' || !Number.isFinite(mtimeMs)) return undefined;
  return { row, record: { mark: { revision, position, recordedAt }, stamp: { size, ino, mtimeMs } } };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
