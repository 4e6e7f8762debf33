import { writeFileAtomic } from '@sessionfold/atomic-write';
import { validateStreamId, type StreamId } from '@sessionfold/core/kernel';
import { atomicWriteFs, type FileSystem } from './fs-layer.js';
import { decodeLine, frameLine } from './journal-codec.js';
import { EVENT_IDS_NOT_READ, type Checkpoint, type JournalInfo } from './journal-scan.js';
import type { ChangeMark } from './stream-files.js';

/** Names the kind of file, so a manifest is never mistaken for some other JSON. */
export const MANIFEST_FORMAT = 'sessionfold.file-store-manifest';
/** Bumped when the encoding changes; a manifest of another version is ignored (the store is scanned instead). */
export const MANIFEST_VERSION = 1;

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

/** What the manifest holds of one stream's files. */
export interface ManifestStream {
  snapshot?: { mark: ChangeMark; stamp: FileStamp };
  /** The journal as open would describe it, without event ids (read on the stream's first append). */
  journal?: { info: JournalInfo; stamp: FileStamp };
}

/** A store's manifest: for the store format it was written for, what opening found in each stream's files. */
export interface Manifest {
  formatVersion: number;
  /** Every position up to this one had settled when the streams were recorded: a line added later is past it. */
  position: number;
  streams: Map<StreamId, ManifestStream>;
}

/** A stamp no file matches: the file is read at open. */
export const UNKNOWN_STAMP: FileStamp = { size: -1, ino: -1, mtimeMs: -1 };

/** The stamp of `path` now, or undefined when there is no such file. */
export async function stampOf(fsl: FileSystem, path: string): Promise<FileStamp | undefined> {
  try {
    const stats = await fsl.lstat(path);
    return { size: stats.size, ino: stats.ino ?? -1, mtimeMs: stats.mtimeMs ?? -1 };
  } catch {
    return undefined;
  }
}

/** True when `now` is the file `recorded` describes, unchanged (as far as size, inode and time tell). */
export function unchanged(now: FileStamp, recorded: FileStamp): boolean {
  return recorded.ino !== -1 && recorded.mtimeMs !== -1 && now.size === recorded.size && now.ino === recorded.ino && now.mtimeMs === recorded.mtimeMs;
}

type SnapshotRow = [revision: number, position: number, recordedAt: string, size: number, ino: number, mtimeMs: number];
type JournalRow = [
  length: number,
  lastRevision: number,
  maxPosition: number,
  liveOffset: number,
  liveLine: number,
  firstPosition: number,
  lastPosition: number,
  lines: number,
  ino: number,
  mtimeMs: number,
  /** revision, position, offset, line of each checkpoint, in a row. */
  checkpoints: number[],
  lastHash: string,
];

/** The manifest's bytes: one framed line (`<sha256> <json>\n`), checked by the same checksum as journal lines. */
export function encodeManifest(manifest: Manifest): string {
  const streams: [StreamId, SnapshotRow | 0, JournalRow | 0][] = [];
  for (const [stream, { snapshot, journal }] of manifest.streams) {
    const snapshotRow: SnapshotRow | 0 = snapshot
      ? [snapshot.mark.revision, snapshot.mark.position, snapshot.mark.recordedAt, snapshot.stamp.size, snapshot.stamp.ino, snapshot.stamp.mtimeMs]
      : 0;
    let journalRow: JournalRow | 0 = 0;
    if (journal) {
      const { info, stamp } = journal;
      const checkpoints: number[] = [];
      for (const c of info.checkpoints) checkpoints.push(c.revision, c.position, c.offset, c.line);
      // A journal's recorded stamp always describes `length` bytes: the size is not stored twice.
      const known = stamp.size === info.length;
      journalRow = [
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
        checkpoints,
        info.lastHash,
      ];
    }
    streams.push([stream, snapshotRow, journalRow]);
  }
  const { formatVersion, position } = manifest;
  return frameLine(JSON.stringify({ format: MANIFEST_FORMAT, manifestVersion: MANIFEST_VERSION, formatVersion, position, streams }));
}

/**
 * The manifest in `bytes`, or undefined when it is not one this release wrote for itself: damaged (checksum,
 * framing, JSON), of another manifest version, or with any field out of range. Never throws: a manifest only
 * ever saves work.
 */
export function decodeManifest(bytes: Buffer): Manifest | undefined {
  if (bytes.length === 0 || bytes.indexOf(0x0a) !== bytes.length - 1) return undefined;
  const decoded = decodeLine(bytes, 0, bytes.length - 1);
  if ('reason' in decoded) return undefined;
  try {
    const { format, manifestVersion, formatVersion, position, streams } = (decoded.value ?? {}) as Record<string, unknown>;
    if (format !== MANIFEST_FORMAT || manifestVersion !== MANIFEST_VERSION || !isCount(formatVersion) || !isCount(position) || !Array.isArray(streams)) {
      return undefined;
    }
    const result = new Map<StreamId, ManifestStream>();
    for (const row of streams as unknown[]) {
      if (!Array.isArray(row) || row.length !== 3) return undefined;
      const stream: unknown = row[0];
      const snapshotRow: unknown = row[1];
      const journalRow: unknown = row[2];
      if (typeof stream !== 'string' || result.has(stream)) return undefined;
      validateStreamId(stream);
      const entry: ManifestStream = {};
      if (snapshotRow !== 0) {
        const snapshot = asSnapshot(snapshotRow);
        if (!snapshot) return undefined;
        entry.snapshot = snapshot;
      }
      if (journalRow !== 0) {
        const journal = asJournal(journalRow);
        if (!journal) return undefined;
        entry.journal = journal;
      }
      result.set(stream, entry);
    }
    return { formatVersion, position, streams: result };
  } catch {
    return undefined;
  }
}

/** A manifest as read from its file, with the checksum of its line (what a clean-close mark names). */
export interface StoredManifest {
  manifest: Manifest;
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

/** Replaces the manifest atomically (temp sibling, fsync, rename, fsync directory); resolves to its line's checksum. */
export async function writeManifest(fsl: FileSystem, path: string, manifest: Manifest): Promise<string> {
  const line = encodeManifest(manifest);
  await writeFileAtomic(path, line, { mode: 0o600, fs: atomicWriteFs(fsl) });
  return line.slice(0, HASH_CHARS);
}

/** Hex characters of the sha256 that starts a framed line. */
const HASH_CHARS = 64;

function asSnapshot(row: unknown): ManifestStream['snapshot'] {
  if (!Array.isArray(row) || row.length !== 6) return undefined;
  const [revision, position, recordedAt, size, ino, mtimeMs] = row as unknown[];
  if (!isCount(revision) || revision < 1 || !isCount(position) || position < 1 || typeof recordedAt !== 'string') return undefined;
  const stamp = asStamp(size, ino, mtimeMs);
  return stamp && { mark: { revision, position, recordedAt }, stamp };
}

/** One journal's row as its description; checked field by field without building anything on the way (open decodes one per journal). */
function asJournal(row: unknown): ManifestStream['journal'] {
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
