import { CorruptionError, type Snapshot } from '@sessionfold/core/kernel';
import { PagedEvents, type EventRow } from '@sessionfold/core/store-kit';
import type { FileSystem } from '../fs-layer.js';
import { decodeLogLine, type ChangeRecord } from './records.js';
import { segmentIndexFor, type Segment } from './segments.js';
import { RUN_SLOTS, runAt, type MarkRecord, type StreamEntry, type StreamIndex } from './stream-index.js';

/** Bytes of runs one page of a stream read fetches; a feed read's chunk. */
const PAGE_BYTES = 1 << 20;
const NEWLINE = 0x0a;

/** What reads need of the store: the index and the segments as they are now. */
export interface ReadContext {
  readonly fs: FileSystem;
  readonly index: StreamIndex;
  readonly segments: readonly Segment[];
  /** Tells the store's observer of damage a read met (and poisons a writer). */
  corrupt(error: CorruptionError): CorruptionError;
}

function segmentOf(ctx: ReadContext, base: number): Segment {
  const segment = ctx.segments[segmentIndexFor(ctx.segments, base)];
  if (segment === undefined || segment.base !== base) throw new Error(`no segment ${base}`);
  return segment;
}

/** Damage a read met at byte `offset` of `segment`: made a `CorruptionError` naming the line by `located`. */
class ReadDamage {
  constructor(
    readonly segment: Segment,
    readonly offset: number,
    readonly reason: string,
  ) {}
}

/** `error` as the caller gets it: damage as a `CorruptionError` naming the segment and line (told to the store). */
async function located(ctx: ReadContext, error: unknown): Promise<unknown> {
  if (!(error instanceof ReadDamage)) return error;
  const line = await error.segment.lineAt(ctx.fs, error.offset).catch(() => undefined);
  return ctx.corrupt(new CorruptionError(error.segment.path, line, error.reason));
}

/** Each change record of the whole lines in `bytes` (read from `segment` at `offset`), in order; damage is a `ReadDamage`. */
function* changesIn(segment: Segment, bytes: Buffer, offset: number): Generator<ChangeRecord> {
  let start = 0;
  for (let end = bytes.indexOf(NEWLINE); end !== -1; start = end + 1, end = bytes.indexOf(NEWLINE, start)) {
    const record = decodeLogLine(bytes, start, end);
    if ('damage' in record) throw new ReadDamage(segment, offset + start, record.damage);
    if (record.kind === 'change') yield record;
  }
}

function rowOf(record: ChangeRecord): EventRow {
  return [record.position, record.stream, record.revision, record.type, record.dataJson, record.eventId ?? null, record.recordedAt, record.schemaVersion ?? 1];
}

/**
 * A stream's live events as a read found them when it started, each run with the segment object it lies in:
 * later appends, compactions and a cleaning that rewrites a segment do not change what it reads.
 */
export interface HeldStream {
  name: string;
  runs: readonly number[];
  firstRunRevision: number;
  segments: readonly Segment[];
  through: number;
  snapshot: { mark: MarkRecord; segment: Segment } | undefined;
}

/** `entry` as a read holds it (taken synchronously, before the read's first await). */
export function holdStream(ctx: ReadContext, entry: StreamEntry): HeldStream {
  const runs = entry.runs.slice();
  const segments: Segment[] = [];
  for (let i = 0; i < runs.length; i += RUN_SLOTS) segments.push(segmentOf(ctx, ctx.index.bases[runAt(runs, i).ordinal] as number));
  const mark = entry.snapshot;
  return {
    name: entry.name,
    runs,
    firstRunRevision: entry.firstRunRevision,
    segments,
    through: entry.revision,
    snapshot: mark === undefined ? undefined : { mark, segment: segmentOf(ctx, mark.at.segment) },
  };
}

/** The snapshot the held stream's snapshot record holds. */
export async function readSnapshot(ctx: ReadContext, held: HeldStream): Promise<Snapshot | undefined> {
  if (held.snapshot === undefined) return undefined;
  const { mark, segment } = held.snapshot;
  let record: ChangeRecord | undefined;
  try {
    [record] = changesIn(segment, await segment.read(ctx.fs, mark.at.offset, mark.at.bytes), mark.at.offset);
  } catch (error) {
    throw await located(ctx, error);
  }
  if (record === undefined || record.position !== mark.position) {
    throw await located(ctx, new ReadDamage(segment, mark.at.offset, `the snapshot of ${held.name} is not here`));
  }
  return JSON.parse(record.dataJson) as Snapshot;
}

/**
 * The events of `entry` from revision `from` (after its snapshot), as rows, page by page: the runs are taken
 * when the read starts, so later appends do not show and a compaction does not pull lines from under it.
 */
export function streamPages(ctx: ReadContext, held: HeldStream, from: number): { first: Promise<EventRow[]>; next: () => Promise<EventRow[] | undefined> } {
  const { runs, through, name, segments } = held;
  let run = 0;
  // Skips runs that end before `from`.
  for (let first = held.firstRunRevision; run + RUN_SLOTS < runs.length; run += RUN_SLOTS) {
    const { count } = runAt(runs, run);
    if (first + count > from) break;
    first += count;
  }
  const page = (): Promise<EventRow[] | undefined> =>
    nextPage().catch(async (error: unknown) => {
      throw await located(ctx, error);
    });
  /** How far into the current run the read has come: a long run (a stream written alone) is read a page at a time. */
  let within = 0;
  const nextPage = async (): Promise<EventRow[] | undefined> => {
    if (run >= runs.length) return undefined;
    const rows: EventRow[] = [];
    let bytes = 0;
    while (run < runs.length && (rows.length === 0 || bytes < PAGE_BYTES)) {
      const segment = segments[run / RUN_SLOTS] as Segment;
      const current = runAt(runs, run);
      const offset = current.offset + within;
      const left = current.bytes - within;
      let asked = Math.min(left, PAGE_BYTES);
      let read = await segment.read(ctx.fs, offset, asked);
      let whole = read.lastIndexOf(NEWLINE) + 1;
      // A line longer than a page: read on until its end (or the file's).
      while (whole === 0 && read.length === asked && asked < left) {
        asked = Math.min(left, asked * 2);
        read = await segment.read(ctx.fs, offset, asked);
        whole = read.lastIndexOf(NEWLINE) + 1;
      }
      if (whole === 0)
        throw new ReadDamage(
          segment,
          offset,
          read.length < left ? `the file ends before byte ${offset + left}` : `the lines of ${name} do not end where the index says`,
        );
      for (const record of changesIn(segment, read.subarray(0, whole), offset)) {
        if (record.stream !== name) throw new ReadDamage(segment, offset, `the line is not of ${name}`);
        if (record.revision >= from && record.revision <= through) rows.push(rowOf(record));
      }
      bytes += whole;
      within += whole;
      if (within === current.bytes) {
        run += RUN_SLOTS;
        within = 0;
      } else if (read.length < asked) {
        throw new ReadDamage(segment, offset + read.length, `the file ends before byte ${offset + left}`);
      }
    }
    return rows;
  };
  return { first: page().then((rows) => rows ?? []), next: page };
}

/** `streamPages` as an iterable of events (or of stored events with `stored`). */
export async function streamEvents<T>(ctx: ReadContext, held: HeldStream, from: number, fromRow: (row: EventRow) => T): Promise<PagedEvents<T>> {
  const pages = streamPages(ctx, held, from);
  return new PagedEvents<T>(await pages.first, pages.next, fromRow);
}

/**
 * The feed from `from`: a sequential read of the log from the segment and mark that hold `from`, up to its end
 * when the read started, listing each record the index still calls live. A page (the live records of a chunk
 * read) at a time: a consumer's loop over a page's rows costs no promise per row.
 */
export async function* feedPages(ctx: ReadContext, from: number): AsyncGenerator<EventRow[]> {
  const segments = ctx.segments.slice();
  if (segments.length === 0 || from > ctx.index.lastPosition) return;
  const feed = ctx.index.beginFeed();
  try {
    yield* liveRows(ctx, segments, from, feed.end);
  } catch (error) {
    throw await located(ctx, error);
  } finally {
    feed.done();
  }
}

async function* liveRows(ctx: ReadContext, segments: readonly Segment[], from: number, last: number): AsyncGenerator<EventRow[]> {
  const ends = segments.map((segment) => segment.size);
  let at = segmentIndexFor(segments, from);
  let offset = (segments[at] as Segment).startFor(from).offset;
  for (; at < segments.length; at++, offset = 0) {
    const segment = segments[at] as Segment;
    const end = ends[at] as number;
    let carry: Buffer = Buffer.alloc(0);
    while (offset < end) {
      const chunk = await segment.read(ctx.fs, offset, Math.min(PAGE_BYTES, end - offset));
      if (chunk.length === 0) throw new ReadDamage(segment, offset, `the file ends before byte ${end}`);
      const bytes = carry.length === 0 ? chunk : Buffer.concat([carry, chunk]);
      const whole = bytes.lastIndexOf(NEWLINE) + 1;
      const rows: EventRow[] = [];
      for (const record of changesIn(segment, bytes.subarray(0, whole), offset - carry.length)) {
        if (record.position < from) continue;
        if (record.position > last) {
          if (rows.length > 0) yield rows;
          return;
        }
        if (ctx.index.entry(record.stream)?.isLive(record.type, record.revision, record.position, last) === true) rows.push(rowOf(record));
      }
      carry = bytes.subarray(whole);
      offset += chunk.length;
      if (rows.length > 0) yield rows;
    }
  }
}
