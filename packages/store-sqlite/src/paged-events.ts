import type { RecordedEvent } from '@sessionfold/core/kernel';

/** A row of `events` in column order, as the read statements return it in raw mode. */
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
export const Column = { position: 0, stream: 1, revision: 2, type: 3, data: 4, eventId: 5, recordedAt: 6, schemaVersion: 7 } as const;

/** Builds the port's record from a row; the JSON is parsed only here, as the consumer reaches it. */
export function toEvent(row: EventRow): RecordedEvent {
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

/**
 * An async iterator over pages of rows, each page fetched synchronously when the previous one is used up.
 * Written by hand rather than as an async generator: a replay takes one promise per event this way, and
 * the connection is never held between pages, so the consumer may read and write while it iterates.
 */
export class PagedEvents implements AsyncIterableIterator<RecordedEvent> {
  #page: readonly EventRow[];
  #index = 0;
  #nextPage: (() => readonly EventRow[] | undefined) | undefined;

  /**
   * `nextPage` returns the page after the one used up (it keeps its own cursor), or undefined at the end;
   * it may throw, and the error rejects the `next()` that needed the page.
   */
  constructor(first: readonly EventRow[], nextPage?: () => readonly EventRow[] | undefined) {
    this.#page = first;
    this.#nextPage = nextPage;
  }

  next(): Promise<IteratorResult<RecordedEvent>> {
    try {
      while (this.#index >= this.#page.length) {
        const more = this.#nextPage?.();
        if (more === undefined || more.length === 0) return this.return();
        this.#page = more;
        this.#index = 0;
      }
      return Promise.resolve({ value: toEvent(this.#page[this.#index++] as EventRow), done: false });
    } catch (error) {
      this.#finish();
      return Promise.reject(error);
    }
  }

  return(): Promise<IteratorResult<RecordedEvent>> {
    this.#finish();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  #finish(): void {
    this.#page = [];
    this.#index = 0;
    this.#nextPage = undefined;
  }
}
