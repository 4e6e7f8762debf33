import type { FileSystem } from '../fs-layer.js';
import { decodeLogLine, type BlobRecord, type ChangeRecord } from './records.js';
import type { Segment } from './segments.js';
import type { Location } from './stream-index.js';

/** Bytes read at a time by a scan. */
const CHUNK_BYTES = 1 << 20;
const NEWLINE = 0x0a;

/** What a scan hands on: each whole batch (or blob line) with where it lies; a returned string is a rule it breaks. */
export interface ScanVisitor {
  batch(records: readonly ChangeRecord[], at: Location, line: number): string | undefined;
  blob(record: BlobRecord, at: Location, line: number): string | undefined;
}

/**
 * Where and why a scan stopped before the end of the segment. `offset`/`line` are where the first record not
 * handed on starts (a batch cut short starts there); `damageLine` is the line found damaged. `torn` says the
 * rest could be what a crash leaves while a write is under way: no whole valid line follows the damage and no
 * rule was broken. Anything else is damage.
 */
export interface ScanStop {
  offset: number;
  line: number;
  damageLine: number;
  reason: string;
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
export async function scanSegment(fsl: FileSystem, segment: Segment, from: { offset: number; line: number }, visit: ScanVisitor): Promise<ScanResult> {
  let buffer: Buffer = Buffer.alloc(0);
  /** File offset of `buffer[0]`. */
  let base = from.offset;
  let fileEnd = false;
  let pos = 0;
  let line = from.line;
  let batch: ChangeRecord[] = [];
  let batchStart = { offset: from.offset, line: from.line };
  const stop = async (
    reason: string,
    damageLine: number,
    ruleBroken: boolean,
    resumeOffset = base + buffer.length,
    resumeLine = damageLine + 1,
  ): Promise<ScanResult> => {
    const at = batch.length > 0 ? batchStart : { offset: base + pos, line };
    const torn = !ruleBroken && !(await wholeLineAfter(fsl, segment, base + pos));
    const resume = { offset: resumeOffset, line: resumeLine };
    return { end: at.offset, line: at.line, stop: { offset: at.offset, line: at.line, damageLine, reason, torn, resume } };
  };
  for (;;) {
    const newline = buffer.indexOf(NEWLINE, pos);
    if (newline === -1) {
      if (fileEnd) break;
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
      if (batch.length > 0) return stop(`a blob line inside the batch of ${batch[0]?.stream}`, line, true, base + newline + 1);
      const broken = visit.blob(decoded, at, line);
      if (broken !== undefined) return stop(broken, line, true, base + newline + 1);
    } else {
      if (batch.length === 0) batchStart = { offset: at.offset, line };
      batch.push(decoded);
      if (!decoded.more) {
        const whole: Location = { segment: segment.base, offset: batchStart.offset, bytes: at.offset + at.bytes - batchStart.offset };
        const broken = visit.batch(batch, whole, batchStart.line);
        if (broken !== undefined) return stop(broken, batchStart.line, true, base + newline + 1, line + 1);
        batch = [];
      }
    }
    pos = newline + 1;
    line++;
  }
  if (pos < buffer.length) return stop('the last line is unfinished (no newline)', line, false);
  if (batch.length > 0) return stop('the last batch is cut short (its last line has more: true)', line - 1, false);
  return { end: base + pos, line, stop: undefined };
}

/** Whether a whole line with a valid frame and checksum starts after the line at `offset` (which is damaged). */
async function wholeLineAfter(fsl: FileSystem, segment: Segment, offset: number): Promise<boolean> {
  const rest = await segment.read(fsl, offset, 64 * CHUNK_BYTES);
  let start = rest.indexOf(NEWLINE) + 1;
  if (start === 0) return false;
  for (let end = rest.indexOf(NEWLINE, start); end !== -1; start = end + 1, end = rest.indexOf(NEWLINE, start)) {
    if (!('damage' in decodeLogLine(rest, start, end))) return true;
  }
  return false;
}
