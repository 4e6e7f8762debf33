import { performance } from 'node:perf_hooks';
import {
  ConcurrencyError,
  DELETED_RECORD,
  InvalidInputError,
  SNAPSHOT_RECORD,
  StorageError,
  type AppendResult,
  type ExpectedRevision,
  type StoreObserver,
} from '@sessionfold/core/kernel';
import { eventBytes, revisionMatches, type ObserverCall, type ValidatedEvent, type ValidatedSnapshot } from '@sessionfold/core/store-kit';
import { join } from 'node:path';
import { errorCode, fullDiskReason, nodeFileSystem, syncDir, writeAll, type FileSystem } from '../fs-layer.js';
import { syncLoneFlush } from './lone-flush.js';
import { eventPayloadJson, frameLine } from '../journal-codec.js';
import { blobPayload, type BlobRecord, type ChangeRecord } from './records.js';
import { Segment, segmentFileName } from './segments.js';
import type { Location, StreamIndex } from './stream-index.js';

/**
 * Most UTF-16 code units of lines one flush joins into one string (far below the engine's longest string);
 * one append may not exceed it either.
 */
export const MAX_FLUSH_CHARS = 256 * 1024 * 1024;
/** A segment past this size is sealed and the next flush starts a new one. */
let segmentBytes = 64 * 1024 * 1024;

/** Sets the size at which segments are sealed (tests make many small segments); returns the previous size. */
export function setSegmentBytesForTests(bytes: number): number {
  const previous = segmentBytes;
  segmentBytes = bytes;
  return previous;
}

/** A bound on the characters of an event's line around its data, type and id (escapes counted six times over). */
export function lineCharsBound(dataJson: string, type: string, eventId: string | undefined): number {
  return 400 + dataJson.length + 6 * (type.length + (eventId?.length ?? 0));
}

/** A write the log is asked for: what it is, and how its caller hears the outcome. */
export type LogWrite =
  | { kind: 'append'; stream: string; events: readonly ValidatedEvent[]; chars: number; expected: ExpectedRevision; recordedAt: string }
  | { kind: 'snapshot'; stream: string; snapshot: ValidatedSnapshot; restore: boolean; recordedAt: string }
  | { kind: 'delete'; stream: string; expected: ExpectedRevision; recordedAt: string }
  | { kind: 'blob'; stream: string; sha256: string; gone: boolean };

/** What a settled write resolves with: an append's or a restore's result, or nothing. */
export type WriteOutcome = AppendResult | undefined;

interface Pending {
  write: LogWrite;
  startedAt: number;
  resolve(outcome: WriteOutcome): void;
  reject(error: unknown): void;
}

/** A stream as the writes decided so far in one flush leave it. */
interface Projected {
  revision: number;
  deleted: boolean;
  snapshotRevision: number;
  ids: Map<string, AppendResult> | undefined;
  blobs: Set<string> | undefined;
}

/** What the writer needs of the store around it. */
export interface WriterContext {
  readonly fs: FileSystem;
  readonly logDir: string;
  readonly index: StreamIndex;
  readonly segments: Segment[];
  readonly observe: ObserverCall<StoreObserver> | undefined;
  /** Called once the flush's records are applied to the index: wake followers. */
  changed(): void;
  /** Makes the store refuse writes from now on. */
  poison(reason: string, cause: unknown): void;
  /** Throws when the store refuses writes (poisoned); a write accepted before the store closed is still made. */
  assertNotPoisoned(): void;
}

/**
 * The log's single writer: every write asked for while a flush is under way waits for the next one, and each
 * flush decides its writes in order against the index plus the writes decided before them in the same flush,
 * writes all their lines in one write and one `fdatasync`, then applies them to the index and answers. A refusal
 * (a conflict, a snapshot that no longer fits) is answered only after the flush it was decided in is durable, so a
 * read started after it sees what it was refused for; if that flush fails, the refusal is decided again.
 */
export class LogWriter {
  #queue: Pending[] = [];
  #flushing: Promise<void> | undefined;
  #fd: number | undefined;
  #fdSegment: Segment | undefined;

  constructor(private readonly ctx: WriterContext) {}

  /** Queues `write`; resolves once it is durable and visible to reads, or rejects with why it was refused. */
  submit(write: LogWrite): Promise<WriteOutcome> {
    return new Promise<WriteOutcome>((resolve, reject) => {
      this.#queue.push({ write, startedAt: this.ctx.observe ? performance.now() : 0, resolve, reject });
      // Started on the next turn of the event loop: writes asked for in this turn (a `Promise.all`, callers the
      // last flush answered) share it, and a caller appending in a loop still lets timers and I/O run between
      // its flushes (a lone flush syncs on the calling thread).
      this.#flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#run());
    });
  }

  /** Resolves once every write queued so far has settled. */
  async settled(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing;
  }

  /** Closes the write descriptor (after `settled`). */
  async close(): Promise<void> {
    const fd = this.#fd;
    this.#fd = undefined;
    this.#fdSegment = undefined;
    if (fd !== undefined) await this.ctx.fs.close(fd).catch(() => undefined);
  }

  async #run(): Promise<void> {
    try {
      while (this.#queue.length > 0) await this.#flush(this.#take());
    } finally {
      this.#flushing = undefined;
    }
  }

  #take(): Pending[] {
    let chars = 0;
    let take = 0;
    const queue = this.#queue;
    while (take < queue.length && (take === 0 || chars + charsOf((queue[take] as Pending).write) <= MAX_FLUSH_CHARS)) {
      chars += charsOf((queue[take] as Pending).write);
      take++;
    }
    this.#queue = queue.slice(take);
    return queue.slice(0, take);
  }

  async #flush(pendings: Pending[]): Promise<void> {
    try {
      this.ctx.assertNotPoisoned();
    } catch (error) {
      for (const pending of pendings) pending.reject(error);
      return;
    }
    const { index } = this.ctx;
    const projected = new Map<string, Projected>();
    const project = (stream: string): Projected => {
      let p = projected.get(stream);
      if (p === undefined) {
        const entry = index.entry(stream);
        p = {
          revision: entry?.revision ?? 0,
          deleted: entry?.deleted !== undefined,
          snapshotRevision: entry?.snapshot?.revision ?? 0,
          ids: undefined,
          blobs: entry?.blobs,
        };
        projected.set(stream, p);
      }
      return p;
    };
    const knownId = (stream: string, p: Projected, id: string) =>
      p.ids?.get(id) ?? (p.revision > 0 ? index.entry(stream)?.eventIds?.get(id)?.result : undefined);
    let position = index.lastPosition;
    const lines: string[] = [];
    /** Per write: its records and how many lines of `lines` it wrote. */
    const written: { pending: Pending; records: ChangeRecord[] | BlobRecord | undefined; result: WriteOutcome }[] = [];
    const refused: { pending: Pending; error: unknown }[] = [];
    let events = 0;
    for (const pending of pendings) {
      const write = pending.write;
      const p = project(write.stream);
      try {
        if (write.kind === 'append') {
          const first = write.events[0] as ValidatedEvent;
          const earlier = first.eventId === undefined || p.revision === 0 ? undefined : knownId(write.stream, p, first.eventId);
          if (earlier !== undefined) {
            written.push({ pending, records: undefined, result: { ...earlier } });
            continue;
          }
          for (let i = 1; i < write.events.length; i++) {
            const id = (write.events[i] as ValidatedEvent).eventId;
            if (id !== undefined && p.revision > 0 && knownId(write.stream, p, id) !== undefined) {
              throw new InvalidInputError(`events[${i}].eventId`, `${JSON.stringify(id)} is already in stream ${write.stream}`);
            }
          }
          if (!revisionMatches(write.expected, p.revision, write.expected === 'never_existed' && p.deleted)) {
            throw new ConcurrencyError(write.stream, write.expected, p.revision);
          }
          const records: ChangeRecord[] = [];
          const streamJson = JSON.stringify(write.stream);
          const atJson = JSON.stringify(write.recordedAt);
          const n = write.events.length;
          for (let i = 0; i < n; i++) {
            const event = write.events[i] as ValidatedEvent;
            const record: ChangeRecord = {
              kind: 'change',
              stream: write.stream,
              revision: p.revision + i + 1,
              position: ++position,
              recordedAt: write.recordedAt,
              type: event.type,
              eventId: event.eventId,
              schemaVersion: event.schemaVersion === 1 ? undefined : event.schemaVersion,
              more: i < n - 1,
              dataJson: event.dataJson,
            };
            records.push(record);
            lines.push(
              frameLine(
                eventPayloadJson(
                  streamJson,
                  record.revision,
                  record.position,
                  atJson,
                  JSON.stringify(event.type),
                  event.eventId,
                  record.more,
                  event.dataJson,
                  event.schemaVersion,
                ),
              ),
            );
          }
          events += n;
          const last = records[n - 1] as ChangeRecord;
          const result = { revision: last.revision, position: last.position };
          p.revision = last.revision;
          for (const record of records) if (record.eventId !== undefined) (p.ids ??= new Map()).set(record.eventId, result);
          written.push({ pending, records, result });
        } else if (write.kind === 'snapshot') {
          const revision = write.snapshot.revision;
          if (write.restore) {
            if (p.revision !== 0) throw new ConcurrencyError(write.stream, 'no_stream', p.revision);
          } else {
            if (p.revision === 0) throw new InvalidInputError('stream', `stream ${write.stream} does not exist`);
            if (revision > p.revision) throw new InvalidInputError('snapshot.revision', `revision ${revision} is past the stream's revision ${p.revision}`);
            if (revision < p.snapshotRevision) {
              throw new InvalidInputError('snapshot.revision', `revision ${revision} is older than the stored snapshot's ${p.snapshotRevision}`);
            }
          }
          const dataJson = `{"revision":${revision},"state":${write.snapshot.stateJson},"identity":${JSON.stringify(write.snapshot.identity)}}`;
          const record = reserved(write.stream, SNAPSHOT_RECORD, revision, ++position, write.recordedAt, dataJson);
          lines.push(
            frameLine(
              eventPayloadJson(
                JSON.stringify(write.stream),
                revision,
                record.position,
                JSON.stringify(write.recordedAt),
                JSON.stringify(SNAPSHOT_RECORD),
                undefined,
                false,
                dataJson,
              ),
            ),
          );
          if (write.restore) p.revision = revision;
          p.snapshotRevision = revision;
          written.push({ pending, records: [record], result: { revision, position: record.position } });
        } else if (write.kind === 'delete') {
          if (!revisionMatches(write.expected, p.revision, p.deleted)) throw new ConcurrencyError(write.stream, write.expected, p.revision);
          if (p.revision === 0) {
            written.push({ pending, records: undefined, result: undefined });
            continue;
          }
          const record = reserved(write.stream, DELETED_RECORD, p.revision, ++position, write.recordedAt, 'null');
          lines.push(
            frameLine(
              eventPayloadJson(
                JSON.stringify(write.stream),
                p.revision,
                record.position,
                JSON.stringify(write.recordedAt),
                JSON.stringify(DELETED_RECORD),
                undefined,
                false,
                'null',
              ),
            ),
          );
          Object.assign(p, { revision: 0, deleted: true, snapshotRevision: 0, ids: undefined, blobs: undefined });
          written.push({ pending, records: [record], result: undefined });
        } else {
          if ((p.blobs?.has(write.sha256) === true) !== write.gone) {
            written.push({ pending, records: undefined, result: undefined });
            continue;
          }
          lines.push(frameLine(blobPayload(write.stream, write.sha256, write.gone)));
          p.blobs = new Set(p.blobs);
          if (write.gone) p.blobs.delete(write.sha256);
          else p.blobs.add(write.sha256);
          written.push({ pending, records: { kind: 'blob', stream: write.stream, sha256: write.sha256, gone: write.gone }, result: undefined });
        }
      } catch (error) {
        refused.push({ pending, error });
      }
    }
    if (lines.length > 0) {
      let failure: unknown;
      let syncMs = 0;
      try {
        syncMs = await this.#write(lines, pendings.length === 1 && this.#queue.length === 0);
      } catch (error) {
        failure = error;
      }
      if (failure !== undefined) {
        const failed = new Set<Pending>();
        for (const { pending, records } of written) {
          if (records === undefined) continue;
          failed.add(pending);
          pending.reject(failure);
        }
        // The others were decided against writes that never happened: decided again, in the order they came.
        this.#queue.unshift(...pendings.filter((pending) => !failed.has(pending)));
        return;
      }
      this.#apply(lines, written);
      this.ctx.changed();
      if (this.ctx.observe) {
        const appended = written.flatMap(({ pending, records }) => (pending.write.kind === 'append' && records !== undefined ? [pending.write.events] : []));
        const bytes = appended.reduce((sum, batch) => sum + eventBytes(batch), 0);
        if (appended.length > 0) this.ctx.observe('flushed', { appends: appended.length, events, bytes, syncMs });
      }
    }
    const now = this.ctx.observe ? performance.now() : 0;
    for (const { pending, result } of written) {
      const write = pending.write;
      if (write.kind === 'append' && this.ctx.observe) {
        this.ctx.observe('appendCommitted', {
          stream: write.stream,
          events: write.events.length,
          bytes: eventBytes(write.events),
          durationMs: now - pending.startedAt,
        });
      }
      pending.resolve(result);
    }
    for (const { pending, error } of refused) pending.reject(error);
  }

  /** Applies the durable flush's records to the index, with where each lies in the active segment. */
  #apply(lines: readonly string[], written: readonly { records: ChangeRecord[] | BlobRecord | undefined }[]): void {
    const segment = this.#fdSegment as Segment;
    const { index } = this.ctx;
    let line = 0;
    for (const { records } of written) {
      if (records === undefined) continue;
      const count = Array.isArray(records) ? records.length : 1;
      let bytes = 0;
      for (let i = 0; i < count; i++) bytes += Buffer.byteLength(lines[line + i] as string);
      const at: Location = { segment: segment.base, offset: segment.size, bytes };
      if (Array.isArray(records)) {
        segment.mark((records[0] as ChangeRecord).position, at.offset, segment.lines + 1);
        index.apply(records, at);
      } else index.applyBlob(records);
      segment.size += bytes;
      segment.lines += count;
      line += count;
    }
  }

  /** Writes `lines` at the end of the active segment (starting a new one first when it is full) and syncs them; the sync's milliseconds. */
  async #write(lines: readonly string[], lone: boolean): Promise<number> {
    const { fs } = this.ctx;
    let segment = this.ctx.segments.at(-1);
    if (segment === undefined || segment.size >= segmentBytes) segment = await this.#startSegment();
    if (this.#fdSegment !== segment) {
      await this.close();
      this.#fd = await fs.open(segment.path, 'r+').catch((cause: unknown) => {
        throw new StorageError(`Could not open ${segment?.path} for writing.`, { cause });
      });
      this.#fdSegment = segment;
    }
    const fd = this.#fd as number;
    const bytes = Buffer.from(lines.length === 1 ? (lines[0] as string) : lines.join(''));
    try {
      await writeAll(fs, fd, bytes, segment.size);
    } catch (cause) {
      await this.#cutBack(fd, segment, cause);
      throw new StorageError(`Could not write to ${segment.path}${fullDiskReason(cause)}.`, { cause });
    }
    const syncStart = performance.now();
    try {
      if (lone && fs === nodeFileSystem) syncLoneFlush(fd);
      else await fs.fdatasync(fd);
    } catch (cause) {
      this.ctx.poison(`a write to ${segment.path} failed to sync`, cause);
      throw new StorageError(`Could not sync ${segment.path}; the store refuses writes until it is reopened.`, { cause, poisoned: true });
    }
    return performance.now() - syncStart;
  }

  /** Removes what a failed write left past the segment's end; if even that fails, nothing more may be written. */
  async #cutBack(fd: number, segment: Segment, cause: unknown): Promise<void> {
    try {
      await this.ctx.fs.ftruncate(fd, segment.size);
    } catch (truncateError) {
      this.ctx.poison(`a failed write to ${segment.path} could not be cut back`, truncateError);
      throw new StorageError(`Could not write to ${segment.path}${fullDiskReason(cause)}; the store refuses writes until it is reopened.`, {
        cause,
        poisoned: true,
      });
    }
  }

  /** Creates the next segment, named after the log's next position, and makes its name durable. */
  async #startSegment(): Promise<Segment> {
    const { fs, logDir, segments, index } = this.ctx;
    const base = Math.max(index.lastPosition + 1, (segments.at(-1)?.base ?? 0) + 1);
    const segment = new Segment(base, join(logDir, segmentFileName(base)));
    try {
      const fd = await fs.open(segment.path, 'wx', 0o600);
      await fs.close(fd);
    } catch (cause) {
      if (errorCode(cause) !== 'EEXIST') throw new StorageError(`Could not create ${segment.path}${fullDiskReason(cause)}.`, { cause });
      this.ctx.poison(`${segment.path} exists though the log does not know it`, cause);
      throw new StorageError(`Could not create ${segment.path}: a file of that name exists; the store refuses writes until it is reopened.`, {
        cause,
        poisoned: true,
      });
    }
    try {
      await syncDir(fs, logDir);
    } catch (cause) {
      // The segment's name may or may not survive a crash: nothing may be written to it on that footing.
      this.ctx.poison(`the new segment ${segment.path} could not be made durable`, cause);
      throw new StorageError(`Could not sync ${logDir} after creating ${segment.path}; the store refuses writes until it is reopened.`, {
        cause,
        poisoned: true,
      });
    }
    segments.push(segment);
    return segment;
  }
}

function reserved(stream: string, type: string, revision: number, position: number, recordedAt: string, dataJson: string): ChangeRecord {
  return { kind: 'change', stream, revision, position, recordedAt, type, eventId: undefined, schemaVersion: undefined, more: false, dataJson };
}

function charsOf(write: LogWrite): number {
  if (write.kind === 'append') return write.chars;
  if (write.kind === 'snapshot') return 400 + write.snapshot.stateJson.length;
  return 400;
}
