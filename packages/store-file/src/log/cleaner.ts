import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { StorageError } from '@sessionfold/core/kernel';
import { fullDiskReason, syncDir, unlinkIfPresent, writeAll, type FileSystem } from '../fs-layer.js';
import { removeIndexSnapshots } from './index-snapshot.js';
import { readCanonicalHead } from '../canonical-head.js';
import { decodeLogLine } from './records.js';
import { Segment, segmentFileName } from './segments.js';
import { packRun, RUN_SLOTS, runAt, type Location, type StreamIndex } from './stream-index.js';

/** A sealed segment is cleaned once at least this share of its bytes is dead. */
export const CLEAN_DEAD_SHARE = 0.5;
const NEWLINE = 0x0a;
/** A line's `<sha256 hex> ` before its payload. */
const HASH_AND_SPACE = 65;
const SPACE = 0x20;
/**
 * Longest the cleaner holds the event loop before it lets appends and reads run (milliseconds): what an append
 * arriving meanwhile waits for the cleaner's CPU (its disk writes still share the disk with the append's sync).
 */
const SLICE_MS = 0.2;
/** Bytes of a segment read at a time. */
const READ_BYTES = 1024 * 1024;
/** Bytes of a cleaned segment written between two syncs. */
const SYNC_BYTES = 512 * 1024;
/** Lines decided between two looks at the clock. */
const LINES_PER_LOOK = 16;

/** The live lines of a cleaned segment: where each was and where it is now (flattened old offset, new offset, bytes). */
type Moves = number[];

/** The sealed segments worth cleaning now: the active (last) one is never cleaned. */
export function segmentsToClean(segments: readonly Segment[], index: StreamIndex): Segment[] {
  return segments.slice(0, -1).filter((segment) => segment.size > 0 && (index.dead.get(segment.base) ?? 0) >= segment.size * CLEAN_DEAD_SHARE);
}

/**
 * Rewrites `segment` with only its live lines, byte for byte and with their positions, so the log keeps its
 * order and each line its checksum: written to a temporary file and made durable, the index snapshots removed
 * (they point into the old file), then renamed over the segment and the directory synced. Returns the new segment
 * object, whose lines the index now points at; the old one stays readable for reads that hold it. It reads the
 * segment a chunk at a time and lets the event loop turn every `SLICE_MS`, so appends and reads go on meanwhile.
 */
export async function cleanSegment(fs: FileSystem, logDir: string, segment: Segment, index: StreamIndex, indexDir: string): Promise<Segment> {
  const cleaned = new Segment(segment.base, join(logDir, segmentFileName(segment.base)));
  const temp = join(logDir, `.${segmentFileName(segment.base)}.clean.tmp`);
  const moves: Moves = [];
  let fd: number | undefined;
  try {
    fd = await fs.open(temp, 'w', 0o600);
    const out = new SyncedPieces(fs, fd);
    let line = 1;
    let sliceStart = performance.now();
    let looked = 0;
    /** Bytes read but not decided yet (a line the last chunk cut), and the offset in the segment of the first. */
    let rest: Buffer = Buffer.alloc(0);
    let restAt = 0;
    const ordinal = index.ordinal(segment.base);
    const holdsEvents = new Map<string, boolean>();
    for (let offset = 0; offset < segment.size; ) {
      const chunk = await segment.read(fs, offset, Math.min(READ_BYTES, segment.size - offset));
      if (chunk.length === 0) break;
      offset += chunk.length;
      const bytes = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
      let start = 0;
      for (let end = bytes.indexOf(NEWLINE); end !== -1; start = end + 1, end = bytes.indexOf(NEWLINE, start)) {
        if (++looked === LINES_PER_LOOK) {
          looked = 0;
          if (performance.now() - sliceStart >= SLICE_MS) {
            await new Promise((resolve) => setImmediate(resolve));
            sliceStart = performance.now();
          }
        }
        if (isDeadAtAGlance(bytes, start, end, restAt + start, index, segment.base, ordinal, holdsEvents)) continue;
        // The lines were checked when the index read them and are copied byte for byte, so only their head is
        // read here, without the checksum (a read checks it again); a line of another shape is decoded in full.
        const head =
          end - start > HASH_AND_SPACE && bytes[start + HASH_AND_SPACE - 1] === SPACE ? readCanonicalHead(bytes, start + HASH_AND_SPACE, end) : undefined;
        const record = head !== undefined ? { kind: 'change' as const, ...head } : decodeLogLine(bytes, start, end);
        // Anything the cleaner cannot read again is kept as it is, for verify to name.
        const live =
          'damage' in record ||
          (record.kind === 'blob'
            ? // A line taking ownership back stays: an owner line it answers may still be in an earlier segment.
              record.gone || index.entry(record.stream)?.blobs?.has(record.sha256) === true
            : index.entry(record.stream)?.isLive(record.type, record.revision, record.position) === true);
        if (!live) continue;
        if (!('damage' in record) && record.kind === 'change') cleaned.mark(record.position, out.bytes, line);
        moves.push(restAt + start, out.bytes, end + 1 - start);
        if (out.add(bytes.subarray(start, end + 1))) await out.write();
        line++;
      }
      rest = bytes.subarray(start);
      restAt += start;
    }
    await out.write();
    cleaned.size = out.bytes;
    cleaned.lines = line - 1;
  } catch (cause) {
    if (fd !== undefined) await fs.close(fd).catch(() => undefined);
    await unlinkIfPresent(fs, temp).catch(() => undefined);
    throw new StorageError(`Could not clean ${segment.path}${fullDiskReason(cause)}.`, { cause });
  }
  await fs.close(fd);
  // Opened before the rename, the old file stays readable for reads that hold it.
  await segment.descriptor(fs);
  await removeIndexSnapshots(fs, indexDir);
  await fs.rename(temp, cleaned.path);
  await syncDir(fs, logDir);
  remap(index, segment.base, moves);
  index.dead.delete(segment.base);
  return cleaned;
}

/** `{"stream":"` and `","r`: an event-shaped line's opening, and what follows its stream's name (`,"revision"`). */
const STREAM_MEMBER = Buffer.from('{"stream":"');
const AFTER_NAME = Buffer.from('","r');

/**
 * True when the line at `start` is an event-shaped line of a stream none of whose live events lie in this segment
 * (a deleted stream, one compacted past every event here) and is not that stream's live `$snapshot` or `$deleted`
 * record: dead, known from its stream's name alone. Most lines of a mostly dead segment are such lines; reading
 * only the name keeps the cleaner's work per line small. Anything else is for the full decision.
 */
function isDeadAtAGlance(
  bytes: Buffer,
  start: number,
  end: number,
  offset: number,
  index: StreamIndex,
  base: number,
  ordinal: number,
  holdsEvents: Map<string, boolean>,
): boolean {
  const name = start + HASH_AND_SPACE + STREAM_MEMBER.length;
  if (end <= name || !bytesAre(bytes, start + HASH_AND_SPACE, STREAM_MEMBER)) return false;
  // A stream's name holds no quote and no escape (`STREAM_ID_PATTERN`), so the next quote ends it.
  const nameEnd = bytes.indexOf(0x22, name);
  if (nameEnd === -1 || nameEnd + AFTER_NAME.length > end || !bytesAre(bytes, nameEnd, AFTER_NAME)) return false;
  const stream = bytes.toString('latin1', name, nameEnd);
  const entry = index.entry(stream);
  if (entry === undefined) return false;
  let holds = holdsEvents.get(stream);
  if (holds === undefined) {
    holds = false;
    for (let i = 0; i < entry.runs.length && !holds; i += RUN_SLOTS) holds = runAt(entry.runs, i).ordinal === ordinal;
    holdsEvents.set(stream, holds);
  }
  if (holds) return false;
  const isAt = (mark: { at: Location } | undefined) => mark !== undefined && mark.at.segment === base && mark.at.offset === offset;
  return !isAt(entry.snapshot) && !isAt(entry.deleted);
}

/** Whether the bytes of `bytes` at `at` are `expected` (short: a loop is cheaper than `Buffer.compare` here). */
function bytesAre(bytes: Buffer, at: number, expected: Buffer): boolean {
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}

/**
 * Writes the bytes it is given one after another from the start of a file, a piece of `SYNC_BYTES` at a time,
 * each synced before the next: an append's fdatasync queued behind the cleaner's waits for a piece, not the file.
 */
class SyncedPieces {
  /** Bytes given so far: the offset in the file of the next. */
  bytes = 0;
  #written = 0;
  #piece: Buffer[] = [];

  constructor(
    private readonly fs: FileSystem,
    private readonly fd: number,
  ) {}

  /** Takes `bytes`; true when a piece's worth is waiting, for the caller to `write` before it adds more. */
  add(bytes: Buffer): boolean {
    this.#piece.push(bytes);
    this.bytes += bytes.length;
    return this.bytes - this.#written >= SYNC_BYTES;
  }

  /** Writes and syncs what was added since the last write. */
  async write(): Promise<void> {
    const piece = this.#piece.length === 1 ? (this.#piece[0] as Buffer) : Buffer.concat(this.#piece);
    this.#piece = [];
    await writeAll(this.fs, this.fd, piece, this.#written);
    await this.fs.fdatasync(this.fd);
    this.#written += piece.length;
  }
}

/** Points every location in segment `base` at where its lines are after cleaning. */
function remap(index: StreamIndex, base: number, moves: Moves): void {
  /** The index in `moves` of the first kept line at or after old offset `offset`. */
  const at = (offset: number): number => {
    let lo = 0;
    let hi = moves.length / 3;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((moves[mid * 3] as number) < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo * 3;
  };
  const moved = (location: Location): void => {
    const first = at(location.offset);
    const last = at(location.offset + location.bytes);
    location.offset = moves[first + 1] as number;
    location.bytes = last - first === 0 ? 0 : (moves[last - 2] as number) + (moves[last - 1] as number) - location.offset;
  };
  const ordinal = index.ordinal(base);
  for (const entry of index.streams.values()) {
    if (entry.snapshot?.at.segment === base) moved(entry.snapshot.at);
    if (entry.deleted?.at.segment === base) moved(entry.deleted.at);
    const runs = entry.runs;
    let kept: number[] | undefined;
    for (let i = 0; i < runs.length; i += RUN_SLOTS) {
      const run = runAt(runs, i);
      if (run.ordinal !== ordinal) {
        kept?.push(runs[i] as number, runs[i + 1] as number);
        continue;
      }
      const location = { segment: base, offset: run.offset, bytes: run.bytes };
      // A run holds only its stream's lines, so the lines kept in its range are its events that are still live:
      // what went is a dead prefix (revisions a snapshot covers), which only the first run can have.
      const count = (at(run.offset + run.bytes) - at(run.offset)) / 3;
      moved(location);
      if (i === 0) entry.firstRunRevision += run.count - count;
      kept ??= runs.slice(0, i);
      if (count > 0) kept.push(...packRun(ordinal, location.offset, location.bytes, count));
    }
    if (kept !== undefined) entry.runs = kept;
  }
}
