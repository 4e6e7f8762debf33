import { writeFileAtomic } from '@sessionfold/atomic-write';
import type { StreamId } from '@sessionfold/core/kernel';
import { atomicWriteFs, type FileSystem } from './fs-layer.js';
import { decodeLine, frameLine } from './journal-codec.js';
import { EVENT_IDS_NOT_READ, type Checkpoint, type JournalInfo } from './journal-scan.js';
import { ManifestBuilder, ManifestTable, type FileStamp, type ManifestColumns, type ManifestStream } from './manifest-table.js';

export { UNKNOWN_STAMP, type FileStamp, type ManifestStream } from './manifest-table.js';

/** Names the kind of file, so a manifest is never mistaken for some other JSON. */
export const MANIFEST_FORMAT = 'sessionfold.file-store-manifest';
/**
 * Bumped when the encoding changes; a manifest of an unknown version is ignored (the store is scanned instead).
 * Version 1 held one row per stream; version 2 holds columns.
 */
export const MANIFEST_VERSION = 2;

/** The streams a manifest records: a decoded manifest's table, or a read-only view's own records. */
export interface StreamRecords {
  readonly size: number;
  get(stream: StreamId): ManifestStream | undefined;
}

/** A store's manifest: for the store format it was written for, what opening found in each stream's files. */
export interface Manifest {
  formatVersion: number;
  /** Every position up to this one had settled when the streams were recorded: a line added later is past it. */
  position: number;
  streams: StreamRecords;
}

/** A manifest decoded from its file: its streams as a table. */
export type DecodedManifest = Manifest & { streams: ManifestTable };

/** The stamp of `path` now, or undefined when there is no such file. */
export async function stampOf(fsl: FileSystem, path: string): Promise<FileStamp | undefined> {
  try {
    return stampFrom(await fsl.lstat(path));
  } catch {
    return undefined;
  }
}

/** `stampOf` with the synchronous call: the stamp of `path` now, or undefined when there is no such file. */
export function stampOfSync(lstatSync: NonNullable<FileSystem['lstatSync']>, path: string): FileStamp | undefined {
  try {
    const stats = lstatSync(path);
    return stats && stampFrom(stats);
  } catch {
    return undefined;
  }
}

/** A stamp from what `lstat` told (-1 for what this file system does not give). */
function stampFrom(stats: { size: number; ino?: number; mtimeMs?: number }): FileStamp {
  return { size: stats.size, ino: stats.ino ?? -1, mtimeMs: stats.mtimeMs ?? -1 };
}

/** True when `now` is the file `recorded` describes, unchanged (as far as size, inode and time tell). */
export function unchanged(now: FileStamp, recorded: FileStamp): boolean {
  return recorded.ino !== -1 && recorded.mtimeMs !== -1 && now.size === recorded.size && now.ino === recorded.ino && now.mtimeMs === recorded.mtimeMs;
}

/**
 * The manifest's bytes: one framed line (`<sha256> <json>\n`), checked by the same checksum as journal lines.
 * The streams are written as columns (see `ManifestColumns`), which decode into a handful of arrays however
 * many streams there are.
 */
export function encodeManifest(formatVersion: number, position: number, columns: ManifestColumns): string {
  return frameLine(JSON.stringify({ format: MANIFEST_FORMAT, manifestVersion: MANIFEST_VERSION, formatVersion, position, ...columns }));
}

/**
 * The manifest in `bytes`, or undefined when it is not one this release can use: damaged (checksum, framing,
 * JSON), of an unknown manifest version, or with any field out of range. Never throws: a manifest only ever
 * saves work. A manifest of version 1 (one row per stream) is read into the same table.
 */
export function decodeManifest(bytes: Buffer): DecodedManifest | undefined {
  if (bytes.length === 0 || bytes.indexOf(0x0a) !== bytes.length - 1) return undefined;
  const decoded = decodeLine(bytes, 0, bytes.length - 1);
  if ('reason' in decoded) return undefined;
  try {
    const value = (decoded.value ?? {}) as Record<string, unknown>;
    const { format, manifestVersion, formatVersion, position, streams } = value;
    if (format !== MANIFEST_FORMAT || !isCount(formatVersion) || !isCount(position)) return undefined;
    let table: ManifestTable | undefined;
    if (manifestVersion === MANIFEST_VERSION) table = ManifestTable.from(value);
    else if (manifestVersion === 1 && Array.isArray(streams)) table = fromRows(streams as unknown[]);
    return table && { formatVersion, position, streams: table };
  } catch {
    return undefined;
  }
}

/** The table of a version 1 manifest's rows (`[stream, snapshot row | 0, journal row | 0]`), or undefined when one is out of range. */
function fromRows(rows: unknown[]): ManifestTable | undefined {
  const builder = new ManifestBuilder();
  for (const row of rows) {
    if (!Array.isArray(row) || row.length !== 3) return undefined;
    const stream: unknown = row[0];
    const snapshotRow: unknown = row[1];
    const journalRow: unknown = row[2];
    if (typeof stream !== 'string') return undefined;
    const entry: ManifestStream = {};
    if (snapshotRow !== 0) {
      const snapshot = asSnapshotV1(snapshotRow);
      if (!snapshot) return undefined;
      entry.snapshot = snapshot;
    }
    if (journalRow !== 0) {
      const journal = asJournalV1(journalRow);
      if (!journal) return undefined;
      entry.journal = journal;
    }
    builder.add(stream, entry);
  }
  // Checked again as columns: duplicate and invalid stream ids, offsets past the end.
  return ManifestTable.from(builder.columns() as unknown as Record<string, unknown>);
}

/** A manifest as read from its file, with the checksum of its line (what a clean-close mark names). */
export interface StoredManifest {
  manifest: DecodedManifest;
  checksum: string;
}

/** Reads the manifest at `path`; undefined when there is none or it cannot be used (see `decodeManifest`). */
export async function readManifest(fsl: FileSystem, path: string): Promise<StoredManifest | undefined> {
  let bytes: Buffer;
  try {
    bytes = await fsl.readFile(path);
  } catch {
    return undefined;
  }
  const manifest = decodeManifest(bytes);
  return manifest && { manifest, checksum: bytes.toString('latin1', 0, HASH_CHARS) };
}

/** Replaces the manifest (`line`, from `encodeManifest`) atomically (temp sibling, fsync, rename, fsync directory); resolves to its line's checksum. */
export async function writeManifest(fsl: FileSystem, path: string, line: string): Promise<string> {
  await writeFileAtomic(path, line, { mode: 0o600, fs: atomicWriteFs(fsl) });
  return line.slice(0, HASH_CHARS);
}

/** Hex characters of the sha256 that starts a framed line. */
const HASH_CHARS = 64;

function asSnapshotV1(row: unknown): ManifestStream['snapshot'] {
  if (!Array.isArray(row) || row.length !== 6) return undefined;
  const [revision, position, recordedAt, size, ino, mtimeMs] = row as unknown[];
  if (!isCount(revision) || revision < 1 || !isCount(position) || position < 1 || typeof recordedAt !== 'string') return undefined;
  const stamp = asStamp(size, ino, mtimeMs);
  return stamp && { mark: { revision, position, recordedAt }, stamp };
}

/** One journal's row of a version 1 manifest as its description. */
function asJournalV1(row: unknown): ManifestStream['journal'] {
  if (!Array.isArray(row) || row.length !== 12) return undefined;
  // Indexed, not destructured: destructuring walks an iterator, which costs per journal before the code is optimized.
  const fields = row as unknown[];
  const length = fields[0];
  const lastRevision = fields[1];
  const maxPosition = fields[2];
  const liveOffset = fields[3];
  const liveLine = fields[4];
  const firstPosition = fields[5];
  const lastPosition = fields[6];
  const lines = fields[7];
  const flat = fields[10];
  const lastHash = fields[11];
  if (typeof lastHash !== 'string' || (lastHash.length !== 0 && !SHA256_HEX.test(lastHash))) return undefined;
  if (
    !isCount(length) ||
    !isCount(lastRevision) ||
    !isCount(maxPosition) ||
    !isCount(liveOffset) ||
    !isCount(liveLine) ||
    !isCount(firstPosition) ||
    !isCount(lastPosition) ||
    !isCount(lines) ||
    !Array.isArray(flat) ||
    flat.length % 4 !== 0
  ) {
    return undefined;
  }
  const stamp = asStamp(length, fields[8], fields[9]);
  if (!stamp || liveOffset > length || lastPosition > maxPosition) return undefined;
  const checkpoints: Checkpoint[] = new Array(flat.length / 4);
  for (let i = 0; i < flat.length; i += 4) {
    const revision: unknown = flat[i];
    const position: unknown = flat[i + 1];
    const offset: unknown = flat[i + 2];
    const line: unknown = flat[i + 3];
    if (!isCount(revision) || !isCount(position) || !isCount(offset) || !isCount(line) || offset >= length) return undefined;
    checkpoints[i / 4] = { revision, position, offset, line };
  }
  // Built as `emptyJournal` builds it (same fields, same order), in one object.
  const info: JournalInfo = {
    length,
    lastRevision,
    maxPosition,
    liveOffset,
    liveLine,
    firstPosition,
    lastPosition,
    lines,
    checkpoints,
    eventIds: EVENT_IDS_NOT_READ,
    tornBytes: 0,
    ino: 0,
    lastHash,
  };
  return { info, stamp };
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

function asStamp(size: unknown, ino: unknown, mtimeMs: unknown): FileStamp | undefined {
  if (!isCount(size) || typeof ino !== 'number' || typeof mtimeMs !== 'number' || !Number.isFinite(mtimeMs)) return undefined;
  return { size, ino, mtimeMs };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
