import type { RecordedEvent } from '@sessionfold/core/kernel';

/** A row of `events` in column order, as the read statements return it in array mode. */
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

/** The columns of `EventRow`, in its order, for a SELECT on `events AS e`. */
export const EVENT_COLUMNS = 'e.position, e.stream, e.revision, e.type, e.data, e.event_id, e.recorded_at, e.schema_version';

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
 * An async iterator over pages of rows. A page is fetched whole (one query) when the one before is used up,
 * so no connection is held between pages and the consumer may read and write while it iterates.
 */
export class PagedEvents implements AsyncIterableIterator<RecordedEvent> {
  #page: readonly EventRow[];
  #index = 0;
  #nextPage: (() => Promise<readonly EventRow[] | undefined>) | undefined;

  /**
   * `nextPage` returns the page after the one used up (it keeps its own cursor), or undefined at the end;
   * when it rejects, the `next()` that needed the page rejects.
   */
  constructor(first: readonly EventRow[], nextPage?: () => Promise<readonly EventRow[] | undefined>) {
    this.#page = first;
    this.#nextPage = nextPage;
  }

  async next(): Promise<IteratorResult<RecordedEvent>> {
    try {
      while (this.#index >= this.#page.length) {
        const more = await this.#nextPage?.();
        if (more === undefined || more.length === 0) return this.return();
        this.#page = more;
        this.#index = 0;
      }
      return { value: toEvent(this.#page[this.#index++] as EventRow), done: false };
    } catch (error) {
      this.#finish();
      throw error;
    }
  }

  async return(): Promise<IteratorResult<RecordedEvent>> {
    this.#finish();
    return { value: undefined, done: true };
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
