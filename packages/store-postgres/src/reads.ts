import { createHash } from 'node:crypto';
import { ConcurrencyError, CorruptionError, type EventStore, type Snapshot, type StreamId } from '@sessionfold/core/kernel';
import {
  PagedEvents,
  StreamPageRows,
  eventFromRow,
  storedEventFromRow,
  validateReadOptions,
  validateSha256,
  validateStreamId,
  validateStreamsOptions,
  type EventRow,
  type PagedRead,
  type StreamPageColumns,
} from '@sessionfold/core/store-kit';
import type { StoreContext } from './context.js';
import { PAGE_SIZE } from './queries.js';

/** The port's reads of streams, of the stream list and of blobs. */
export type Reads = Required<Pick<EventStore, 'read' | 'readStored' | 'streams' | 'getBlob' | 'blobs'>>;

/** The reads: a stream's revision, snapshot and first page come from one statement, so they agree. */
export function createReads(ctx: StoreContext): Reads {
  const { q, rows, live, corrupt, schema } = ctx;
  const missing = (stream: StreamId, revision: number) =>
    corrupt(new CorruptionError(`${schema}.events`, undefined, `stream ${stream} lacks revision ${revision}`));

  /**
   * The pages after the first of a stream read. The position bound keeps out a stream deleted and recreated
   * meanwhile; a gap means the stream was compacted or deleted while it was being read, which is reported
   * instead of skipping events.
   */
  const pageRows = new StreamPageRows();
  const laterPages = (stream: StreamId, from: number, head: number, bound: number) => {
    let next = from;
    return async (): Promise<readonly EventRow[] | undefined> => {
      live();
      if (next > head) return undefined;
      const request = pageRows.page();
      const page = request.expandColumns(stream, await rows<StreamPageColumns>(q.streamPage([...request.passed, stream, next, head, bound])));
      const current = async () => (await rows<{ revision: number }>(q.head([stream])))[0]?.revision ?? 0;
      if (page.length === 0) throw new ConcurrencyError(stream, head, await current());
      for (const row of page) if (row[2] !== next++) throw new ConcurrencyError(stream, head, await current());
      return page;
    };
  };

  /** A stream read with each event built by `fromRow` (`eventFromRow`, or `storedEventFromRow` for data as stored). */
  const readPaged = async <T>(stream: StreamId, readOptions: unknown, fromRow: (row: EventRow) => T): Promise<PagedRead<T>> => {
    live();
    validateStreamId(stream);
    const from = validateReadOptions(readOptions);
    type FirstRow = [head: number, bound: number, snapshotRevision: number | null, snapshotData: string | null, ...EventRow];
    const result = await rows<FirstRow>(q.readFirst([stream, from]));
    const top = result[0] as FirstRow;
    const [head, bound, snapshotRevision, snapshotData] = top;
    if (head === 0) return { revision: 0, events: new PagedEvents([], undefined, fromRow) };
    const snapshot = snapshotRevision === null ? undefined : (JSON.parse(snapshotData as string) as Snapshot);
    const first = top[4] === null ? [] : result.map((row) => row.slice(4) as unknown as EventRow);
    const start = snapshot ? snapshot.revision + 1 : from;
    first.forEach((row, index) => {
      if (row[2] !== start + index) throw missing(stream, start + index);
    });
    const reached = start + first.length;
    if (first.length < PAGE_SIZE && reached <= head) throw missing(stream, reached);
    const rest = reached <= head ? laterPages(stream, reached, head, bound) : undefined;
    return { revision: head, ...(snapshot ? { snapshot } : {}), events: new PagedEvents(first, rest, fromRow) };
  };

  return {
    read: (stream, readOptions) => readPaged(stream, readOptions, eventFromRow),
    readStored: (stream, readOptions) => readPaged(stream, readOptions, storedEventFromRow),

    async *streams(listOptions) {
      live();
      const prefix = validateStreamsOptions(listOptions);
      let page = await rows<[string, number]>(q.streamsFrom([prefix]));
      for (;;) {
        for (const [stream, revision] of page) {
          if (!stream.startsWith(prefix)) return;
          yield { stream, revision };
        }
        const last = page[page.length - 1];
        if (last === undefined || page.length < PAGE_SIZE) return;
        live();
        page = await rows<[string, number]>(q.streamsAfter([last[0]]));
      }
    },

    async getBlob(sha256) {
      live();
      validateSha256(sha256);
      const [row] = await rows<[Buffer]>(q.blobBytes([sha256]));
      if (row === undefined) return undefined;
      const bytes = row[0];
      if (createHash('sha256').update(bytes).digest('hex') !== sha256) {
        throw corrupt(new CorruptionError(`${schema}.blobs`, undefined, `the bytes of blob ${sha256} do not match their sha256`));
      }
      // A copy the caller owns, as a plain Uint8Array (not the driver's Buffer).
      return new Uint8Array(bytes);
    },

    async *blobs(stream) {
      live();
      validateStreamId(stream);
      for (const [sha256] of await rows<[string]>(q.ownedBlobs([stream]))) yield sha256;
    },
  };
}
