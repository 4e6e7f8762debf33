import type { RecordedEvent, StoredEvent, StreamRead } from './port.js';
import type { ReadyIterator } from './ready-items.js';

/** An event as a database store selects it: one row in this column order (see `EVENT_ROW_COLUMN`). */
export type EventRow = [
  position: number,
  stream: string,
  revision: number,
  type: string,
  data: string,
  eventId: string | null,
  recordedAt: string,
  schemaVersion: number,
];

/** Column indexes of `EventRow`. */
export const EVENT_ROW_COLUMN = { position: 0, stream: 1, revision: 2, type: 3, data: 4, eventId: 5, recordedAt: 6, schemaVersion: 7 } as const;

/**
 * A row of a database store's stream page that leaves out what repeats: revision, data as stored, and `meta`: NULL
 * when the row has no event id, schema version 1 and the position − revision, type and commit time passed with the
 * query (`StreamPage.passed`), else the JSON array [position − revision, type, event id, commit time, schema
 * version]. A driver's cost is per column and per string it makes, and consecutive events of a stream mostly share
 * all of these: with better-sqlite3 three columns read a stream about a third faster than the eight of an
 * `EventRow` (PostgreSQL reads `StreamPageColumns`).
 */
export type StreamPageRow = [revision: number, data: string, meta: string | null];

/**
 * The same row as separate columns: revision, data as stored, position − revision, type and commit time (each NULL
 * where it equals what the query passed), event id, and schema version (NULL for 1). For a driver that makes the
 * database's rows into JavaScript values slowly and whose NULLs cost next to nothing (PostgreSQL's): no JSON is
 * built per row that differs (where commit times change every few rows, that cost the server twice the plain
 * read's time). Where columns cost more than a JSON value (better-sqlite3 in process), `StreamPageRow` reads faster.
 */
export type StreamPageColumns = [
  revision: number,
  data: string,
  offset: number | null,
  type: string | null,
  recordedAt: string | null,
  eventId: string | null,
  schemaVersion: number | null,
];

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

/** One page of a stream read: the values its query passes, and how its rows become `EventRow`s. */
export interface StreamPage {
  /** The position − revision, type and commit time the page's query leaves out where a row repeats them. */
  readonly passed: [offset: number, type: string, recordedAt: string];
  /** The page's rows (queried with `passed`) as `EventRow`s of `stream`. */
  expand(stream: string, rows: readonly StreamPageRow[]): EventRow[];
  /** The same for a page queried as `StreamPageColumns`. */
  expandColumns(stream: string, rows: readonly StreamPageColumns[]): EventRow[];
}

/**
 * Rebuilds `EventRow`s from `StreamPageRow`s (or `StreamPageColumns`). It remembers what the last page ended with (of any stream: a store's
 * streams often share their types and commit times) and passes it to the next page's query. Each page keeps what
 * it was queried with, so reads that interleave (an async driver) never expand rows against another's values.
 */
export class StreamPageRows {
  #shared = NO_META;

  /** Begins a page: query it with `passed`, then `expand` its rows. */
  page(): StreamPage {
    const queried = this.#shared;
    return {
      passed: [queried.offset, queried.type, queried.recordedAt],
      expand: (stream, rows) => {
        const { page, last } = expandRows(stream, rows, queried);
        this.#shared = last;
        return page;
      },
      expandColumns: (stream, rows) => {
        const page = expandColumns(stream, rows, queried);
        const last = page[page.length - 1];
        if (last) this.#shared = { offset: last[0] - last[2], type: last[3], eventId: null, recordedAt: last[6], schemaVersion: 1, text: null };
        return page;
      },
    };
  }
}

/** `rows` queried with `passed` as `EventRow`s, and the meta of the last row. */
function expandRows(stream: string, rows: readonly StreamPageRow[], passed: RowMeta): { page: EventRow[]; last: RowMeta } {
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
  return { page, last };
}

/** `rows` queried as `StreamPageColumns` with `passed` as `EventRow`s. */
function expandColumns(stream: string, rows: readonly StreamPageColumns[], passed: RowMeta): EventRow[] {
  const page: EventRow[] = new Array(rows.length);
  const { offset, type, recordedAt } = passed;
  for (let i = 0; i < rows.length; i++) {
    const [revision, data, rowOffset, rowType, rowRecordedAt, eventId, schemaVersion] = rows[i] as StreamPageColumns;
    page[i] = [revision + (rowOffset ?? offset), stream, revision, rowType ?? type, data, eventId, rowRecordedAt ?? recordedAt, schemaVersion ?? 1];
  }
  return page;
}

function metaOf(text: string): RowMeta {
  const [offset, type, eventId, recordedAt, schemaVersion] = JSON.parse(text) as [number, string, string | null, string, number];
  return { offset, type, eventId, recordedAt, schemaVersion, text };
}

/** Builds the port's record from a row; the JSON is parsed only here, as the consumer reaches it. */
export function eventFromRow(row: EventRow): RecordedEvent {
  const event: RecordedEvent = {
    streamId: row[1],
    type: row[3],
    data: JSON.parse(row[4]) as RecordedEvent['data'],
    schemaVersion: row[7],
    revision: row[2],
    position: row[0],
    recordedAt: row[6],
  };
  if (row[5] !== null) event.eventId = row[5];
  return event;
}

/** Builds a `StoredEvent` from a row: the data column's JSON text is handed out as it is, never parsed. */
export function storedEventFromRow(row: EventRow): StoredEvent {
  const event: StoredEvent = {
    streamId: row[1],
    type: row[3],
    dataJson: row[4],
    schemaVersion: row[7],
    revision: row[2],
    position: row[0],
    recordedAt: row[6],
  };
  if (row[5] !== null) event.eventId = row[5];
  return event;
}

/** A stream read whose events a database store builds from rows: a `StreamRead`, or a `StoredStreamRead`. */
export interface PagedRead<T> extends Omit<StreamRead, 'events'> {
  events: PagedEvents<T>;
}

/** The page after the one used up (the source keeps its own cursor), or undefined (or no rows) at the end. */
export type NextPage = () => readonly EventRow[] | undefined | Promise<readonly EventRow[] | undefined>;

/**
 * An async iterator over pages of rows. A page is fetched whole (one query) when the one before is used up, so no
 * connection is held between pages and the consumer may read and write while it iterates. Written by hand rather
 * than as an async generator: with a synchronous page source (better-sqlite3) a replay costs one promise per event.
 */
export class PagedEvents<T = RecordedEvent> implements AsyncIterableIterator<T>, ReadyIterator<T> {
  #page: readonly EventRow[];
  #index = 0;
  #nextPage: NextPage | undefined;
  readonly #fromRow: (row: EventRow) => T;

  /**
   * `nextPage` may throw or reject: the `next()` that needed the page rejects with that error. `fromRow` builds each
   * value (default `eventFromRow`; `storedEventFromRow` for `StoredEvent`s).
   */
  constructor(first: readonly EventRow[], nextPage?: NextPage, fromRow: (row: EventRow) => T = eventFromRow as unknown as (row: EventRow) => T) {
    this.#page = first;
    this.#nextPage = nextPage;
    this.#fromRow = fromRow;
  }

  /** The next value if the current page holds it, without a promise; undefined when `next()` must fetch a page. */
  takeReady(): T | undefined {
    return this.#index < this.#page.length ? this.#fromRow(this.#page[this.#index++] as EventRow) : undefined;
  }

  next(): Promise<IteratorResult<T>> {
    try {
      if (this.#index < this.#page.length) return Promise.resolve({ value: this.#fromRow(this.#page[this.#index++] as EventRow), done: false });
      const more = this.#nextPage?.();
      if (more instanceof Promise) {
        return more.then(
          (rows) => this.#turn(rows),
          (error: unknown) => {
            this.#finish();
            throw error;
          },
        );
      }
      return this.#turn(more);
    } catch (error) {
      this.#finish();
      return Promise.reject(error);
    }
  }

  return(): Promise<IteratorResult<T>> {
    this.#finish();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Moves to a fetched page; an empty or missing one ends the iteration. */
  #turn(rows: readonly EventRow[] | undefined): Promise<IteratorResult<T>> {
    if (rows === undefined || rows.length === 0) return this.return();
    this.#page = rows;
    this.#index = 0;
    return this.next();
  }

  #finish(): void {
    this.#page = [];
    this.#index = 0;
    this.#nextPage = undefined;
  }
}
