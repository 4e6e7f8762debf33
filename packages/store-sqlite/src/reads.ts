import { ConcurrencyError, CorruptionError, type Snapshot, type StreamId } from '@sessionfold/core/kernel';
import { EVENT_ROW_COLUMN, PagedEvents, StreamPageRows, type StreamPageRow, type PagedRead, type EventRow } from '@sessionfold/core/store-kit';
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
  const expander = new StreamPageRows();
  const streamPage = (stream: StreamId, from: number, to: number, maxPosition: number): EventRow[] => {
    const page = expander.page();
    return page.expand(stream, collect<StreamPageRow>(s.streamPage, [...page.passed, stream, from, to, maxPosition, PAGE_SIZE]));
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
