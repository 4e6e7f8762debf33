import {
  ConcurrencyError,
  CorruptionError,
  EVENT_ROW_COLUMN,
  PagedEvents,
  type PagedRead,
  type EventRow,
  type Snapshot,
  type StreamId,
} from '@sessionfold/core/kernel';
import type { SqliteStatement } from './database.js';
import type { Statements } from './statements.js';

/** Rows read per query when streaming a stream, the feed or the stream list: bounded memory, few round trips. */
export const PAGE_SIZE = 512;

/** The store's reads; a page is read whole before anything is handed out, so the connection is never held. */
export interface Reads {
  /** Each event (or feed record) built by `fromRow`: `eventFromRow`, or `storedEventFromRow` for its data as stored. */
  read<T>(stream: StreamId, from: number, fromRow: (row: EventRow) => T): PagedRead<T>;
  /** The feed from `from` up to the last position at the time of the call. */
  feed<T>(from: number, fromRow: (row: EventRow) => T): PagedEvents<T>;
  /** One page of existing streams: names ≥ `from` (first page) or > `after` (the next ones). */
  streamsPage(bound: { from: string } | { after: string }): { stream: StreamId; revision: number }[];
  ownedBlobs(stream: StreamId): string[];
}

/**
 * The reads over prepared statements `s`. `guard` wraps each database call (liveness check and error
 * translation), since a page may be fetched long after the call that began the read.
 */
export function createReads(s: Statements, path: string, guard: <T>(work: () => T) => T): Reads {
  const headOf = (stream: StreamId) => Number(s.headRevision.get(stream, stream));
  /**
   * What the rows of the page read before (of any stream: a store's streams often share their types and commit
   * times) ended with: the next page's query leaves `meta` out of the rows that repeat it.
   */
  let shared = NO_META;
  const streamPage = (stream: StreamId, from: number, to: number, maxPosition: number): EventRow[] => {
    const passed = shared;
    const rows = collect<StreamPageRow>(s.streamPage, [passed.offset, passed.type, passed.recordedAt, stream, from, to, maxPosition, PAGE_SIZE]);
    const page: EventRow[] = new Array(rows.length);
    let last = passed;
    for (let i = 0; i < rows.length; i++) {
      const [revision, data, text] = rows[i] as StreamPageRow;
      // NULL: exactly what was passed, without an event id and at schema version 1.
      let meta = passed;
      if (text !== null) {
        if (text !== last.text) last = metaOf(text);
        meta = last;
      } else last = passed;
      page[i] = [
        revision + meta.offset,
        stream,
        revision,
        meta.type,
        data,
        text === null ? null : meta.eventId,
        meta.recordedAt,
        text === null ? 1 : meta.schemaVersion,
      ];
    }
    shared = last;
    return page;
  };

  /**
   * The pages after the first of a stream read, each in its own read transaction. The position bound keeps
   * out a stream deleted and recreated meanwhile; a gap means the stream was compacted or deleted while it
   * was being read, which is reported instead of skipping events.
   */
  const laterPages = (stream: StreamId, from: number, head: number, maxPosition: number) => {
    let next = from;
    return (): readonly EventRow[] | undefined => {
      if (next > head) return undefined;
      return guard(() => {
        const page = streamPage(stream, next, head, maxPosition);
        if (page.length === 0) throw new ConcurrencyError(stream, head, headOf(stream));
        for (const row of page) if (row[EVENT_ROW_COLUMN.revision] !== next++) throw new ConcurrencyError(stream, head, headOf(stream));
        return page;
      });
    };
  };

  return {
    read(stream, from, fromRow) {
      return guard(() => {
        // One read transaction: the revision, the snapshot and the first page are of the same commit.
        s.begin.run();
        try {
          const head = headOf(stream);
          if (head === 0) return { revision: 0, events: new PagedEvents([], undefined, fromRow) };
          const record = s.snapshotRecord.get(stream) as { revision: number; data: string } | undefined;
          const snapshot = record && record.revision >= from ? (JSON.parse(record.data) as Snapshot) : undefined;
          const start = snapshot ? snapshot.revision + 1 : from;
          const first = start > head ? [] : streamPage(stream, start, head, Number.MAX_SAFE_INTEGER);
          first.forEach((row, index) => {
            if (row[EVENT_ROW_COLUMN.revision] !== start + index) throw missing(path, stream, start + index);
          });
          const reached = start + first.length;
          if (first.length < PAGE_SIZE && reached <= head) throw missing(path, stream, reached);
          const rest = reached <= head ? laterPages(stream, reached, head, Number(s.lastPosition.get())) : undefined;
          return { revision: head, ...(snapshot ? { snapshot } : {}), events: new PagedEvents(first, rest, fromRow) };
        } finally {
          s.commit.run();
        }
      });
    },

    feed(from, fromRow) {
      // Bounded by the last position now, like a snapshot of the feed; a consumer goes on from where it stopped.
      const last = guard(() => Number(s.lastPosition.get() ?? 0));
      let next = from;
      return new PagedEvents(
        [],
        () => {
          if (next > last) return undefined;
          const page = guard(() => collect<EventRow>(s.feedPage, [next, last, PAGE_SIZE]));
          const end = page[page.length - 1];
          next = end === undefined ? last + 1 : end[EVENT_ROW_COLUMN.position] + 1;
          return page;
        },
        fromRow,
      );
    },

    streamsPage(bound) {
      return guard(() =>
        'from' in bound
          ? collect<{ stream: string; revision: number }>(s.streamsFrom, [bound.from, PAGE_SIZE])
          : collect<{ stream: string; revision: number }>(s.streamsAfter, [bound.after, PAGE_SIZE]),
      );
    },

    ownedBlobs(stream) {
      return guard(() => collect<string>(s.ownedBlobs, [stream]));
    },
  };
}

/** A row of `streamPage`: revision, data as stored, and the rest as a JSON array unless it repeats what was passed. */
type StreamPageRow = [revision: number, data: string, meta: string | null];

/** The columns of a stream page's row besides revision and data, and the `meta` text they were read from. */
interface RowMeta {
  offset: number;
  type: string;
  eventId: string | null;
  recordedAt: string;
  schemaVersion: number;
  text: string | null;
}

/** Matches no row: no event's type is empty. */
const NO_META: RowMeta = { offset: 0, type: '', eventId: null, recordedAt: '', schemaVersion: 1, text: null };

function metaOf(text: string): RowMeta {
  const [offset, type, eventId, recordedAt, schemaVersion] = JSON.parse(text) as [number, string, string | null, string, number];
  return { offset, type, eventId, recordedAt, schemaVersion, text };
}

/**
 * Runs a statement to completion into an array (one call into the driver for the whole page), so the
 * connection is free again before anything is handed out.
 */
function collect<T>(statement: SqliteStatement, params: readonly unknown[]): T[] {
  return statement.all(...params) as T[];
}

function missing(path: string, stream: StreamId, revision: number): CorruptionError {
  return new CorruptionError(path, undefined, `table events: stream ${stream} lacks revision ${revision}`);
}
