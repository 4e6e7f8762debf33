import type { FileSystem } from '../fs-layer.js';
import { isLineMissingItsNewline } from '../journal-codec.js';
import { decodeLogLine, type BlobRecord, type ChangeRecord } from './records.js';
import type { Segment } from './segments.js';
import type { Location } from './stream-index.js';

/** Bytes read at a time by a scan. */
const CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;
const SNAPSHOT_TYPE = Buffer.from('"type":"$snapshot"');

/** A rule a batch breaks, and which of its lines breaks it. */
export interface Broken {
  reason: string;
  index: number;
}

/** What a scan hands on: each whole batch (or blob line) with where it lies; what it returns is a rule broken. */
export interface ScanVisitor {
  batch(records: readonly ChangeRecord[], at: Location, line: number): Broken | undefined;
  blob(record: BlobRecord, at: Location, line: number): string | undefined;
}

/**
 * Where and why a scan stopped before the end of the segment. `offset`/`line` are where the first record not
 * handed on starts (a batch cut short starts there); `damageLine` is the line found damaged. `torn` says the
 * rest is what a crash leaves while a write is under way: an unfinished last line (no newline: a partial line, NUL
 * bytes) that is not a whole line whose newline alone changed, or a last batch whose last line never came. A whole
 * line (newline included) that fails its checks, or one that breaks a rule, is damage, wherever it is.
 */
export interface ScanStop {
  offset: number;
  line: number;
  damageLine: number;
  reason: string;
  /** The damaged line looks like a `$snapshot` record (its checksum may not hold): for a report's kind of problem. */
  snapshot: boolean;
  torn: boolean;
  /** Where a check that goes on past the damage resumes: the line after the damaged line (or batch). */
  resume: { offset: number; line: number };
}

/** The end of what a scan handed on, and the stop when it did not reach the end of the segment. */
export interface ScanResult {
  end: number;
  line: number;
  stop: ScanStop | undefined;
}

/**
 * Scans `segment` from `from` (a line start) to the end of its file, checking every line's frame and checksum
 * and handing on each complete batch; a batch is whole at its line without `more`.
 */
export async function scanSegment(
  fsl: FileSystem,
  segment: Segment,
  from: { offset: number; line: number },
  visit: ScanVisitor,
  signal?: AbortSignal,
): Promise<ScanResult> {
  let buffer: Buffer = Buffer.alloc(0);
  /** File offset of `buffer[0]`. */
  let base = from.offset;
  let fileEnd = false;
  let pos = 0;
  let line = from.line;
  let batch: ChangeRecord[] = [];
  let batchStart = { offset: from.offset, line: from.line };
  const stop = (reason: string, damageLine: number, torn: boolean, resumeOffset = base + buffer.length, resumeLine = damageLine + 1): ScanResult => {
    const at = batch.length > 0 ? batchStart : { offset: base + pos, line };
    const resume = { offset: resumeOffset, line: resumeLine };
    const damaged = buffer.subarray(pos, Math.min(resumeOffset - base, buffer.length));
    const snapshot = damaged.includes(SNAPSHOT_TYPE);
    return { end: at.offset, line: at.line, stop: { offset: at.offset, line: at.line, damageLine, reason, snapshot, torn, resume } };
  };
  for (;;) {
    const newline = buffer.indexOf(NEWLINE, pos);
    if (newline === -1) {
      if (fileEnd) break;
      signal?.throwIfAborted();
      const rest = buffer.subarray(pos);
      const chunk = await segment.read(fsl, base + buffer.length, Math.max(CHUNK_BYTES, rest.length));
      if (chunk.length === 0) {
        fileEnd = true;
        continue;
      }
      buffer = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
      base += pos;
      pos = 0;
      continue;
    }
    const decoded = decodeLogLine(buffer, pos, newline);
    if ('damage' in decoded) return stop(decoded.damage, line, false, base + newline + 1);
    const at: Location = { segment: segment.base, offset: base + pos, bytes: newline + 1 - pos };
    if (decoded.kind === 'blob') {
      if (batch.length > 0) return stop(`a blob line inside the batch of ${batch[0]?.stream}`, line, false, base + newline + 1);
      const broken = visit.blob(decoded, at, line);
      if (broken !== undefined) return stop(broken, line, false, base + newline + 1);
    } else {
      if (batch.length === 0) batchStart = { offset: at.offset, line };
      batch.push(decoded);
      if (!decoded.more) {
        const whole: Location = { segment: segment.base, offset: batchStart.offset, bytes: at.offset + at.bytes - batchStart.offset };
        const broken = visit.batch(batch, whole, batchStart.line);
        if (broken !== undefined) return stop(broken.reason, batchStart.line + broken.index, false, base + newline + 1, line + 1);
        batch = [];
      }
    }
    pos = newline + 1;
    line++;
  }
  if (pos < buffer.length) {
    if (isLineMissingItsNewline(buffer.subarray(pos))) return stop('a whole line whose newline was changed', line, false);
    return stop('the last line is unfinished (no newline)', line, true);
  }
  if (batch.length > 0) return stop('the last batch is cut short (its last line has more: true)', line - 1, true);
  return { end: base + pos, line, stop: undefined };
}
