import { createHash } from 'node:crypto';
import {
  eventBytes,
  ChangeSignal,
  ConcurrencyError,
  CorruptionError,
  InvalidInputError,
  PagedEvents,
  StreamPageRows,
  type StreamPageColumns,
  eventFromRow,
  storedEventFromRow,
  type PagedRead,
  type StoredStreamRead,
  StorageError,
  StoreClosedError,
  readClock,
  snapshotJson,
  validateAppend,
  validateNewStreamId,
  validateReadAllOptions,
  validateReadOptions,
  validateSha256,
  validateSnapshot,
  validateStreamId,
  validateStreamsOptions,
  validateWriteOptions,
  followFeed,
  validateFollowOptions,
  validateSignalOption,
  type AppendResult,
  type CheckpointSlot,
  type DisposableEventStore,
  type EventRow,
  type ExpectedRevision,
  type Snapshot,
  type StreamId,
  type StoreStatus,
  type StreamRead,
  type FeedRecord,
  type FollowOptions,
  type ValidatedAppend,
  type VerifyOptions,
  type VerifyReport,
} from '@sessionfold/core/kernel';
import type { QueryArrayConfig, QueryConfig } from 'pg';
import { createCheckpointSlot } from './checkpoint-slot.js';
import { transientFailure, translateError } from './errors.js';
import { FeedListener } from './feed-listener.js';
import { GroupCommit, type AppendJob, type JobAnswer } from './group-commit.js';
import { readOptions, type PostgresStoreOptions } from './options.js';
import { storePool, type PgPool } from './pool.js';
import { LATER_PAGE_SIZE, PAGE_SIZE, queriesFor } from './queries.js';
import { checkSchema, feedChannel, migrate } from './schema.js';
import { verifySchema } from './verify.js';

/** The port, with every optional member there: `verify`, `follow`, `checkpoints` and `status`. */
export interface PostgresEventStore extends DisposableEventStore {
  /** Checks the schema in one read-only transaction; problems are named by table and key. */
  verify(options?: VerifyOptions): Promise<VerifyReport>;
  /** The feed without an end: woken by this object's commits and by NOTIFY, polling at most every second. */
  follow(options?: FollowOptions): AsyncIterable<FeedRecord>;
  /** Checkpoints in the schema's `checkpoints` table, bound to the id in `store_identity`. */
  readonly checkpoints: CheckpointSlot;
  /** The feed's last position, the sessions holding writers back, and the schema's sizes as `details`. */
  status(): Promise<StoreStatus>;
}

/**
 * How often a follower reads the feed again when nothing woke it. Commits of this store object wake followers
 * at once, and commits of every other connection send a NOTIFY that does, so this is the safety net: a change
 * made elsewhere is yielded within at most `POLL_MS` (plus one feed query) even if a notification is lost,
 * and within `POLL_UNHEARD_MS` while the listening connection is being replaced.
 */
const POLL_MS = 1000;
const POLL_UNHEARD_MS = 250;

/** `expectedRevision` as `append_batches` takes it: a revision, 0 for no stream, -1 for any, -2 for never existed. */
const expectedCode = (expected: ExpectedRevision): number =>
  expected === 'any' ? -1 : expected === 'no_stream' ? 0 : expected === 'never_existed' ? -2 : expected;

/**
 * An `EventStore` in PostgreSQL, shared safely by any number of processes and hosts: every write is one
 * statement (one round trip, one transaction) that checks expected revisions in SQL, and positions are
 * handed out in commit order by a counter row every write locks. Appends in flight together in one process
 * share that statement (group commit). Migrates the schema on open (unless `readOnly`); rejects with
 * `StorageError` for a schema of a newer release or of another application, or an unreachable server.
 */
export async function postgresStore(options: PostgresStoreOptions): Promise<PostgresEventStore> {
  const config = readOptions(options);
  const { schema, observe, observed } = config;
  /** Tells the observer about damage about to be thrown. */
  const corrupt = <T extends CorruptionError>(error: T): T => {
    observe('corruptionFound', { error });
    return error;
  };
  const translate = (error: unknown) => {
    const translated = translateError(error, schema);
    return translated instanceof CorruptionError ? corrupt(translated) : translated;
  };
  const owned = storePool(config.connectionString, config.pool);
  const pool: PgPool = owned.pool;
  try {
    if (config.readOnly) await checkSchema(pool, schema);
    else await migrate(pool, schema);
  } catch (error) {
    await owned.release().catch(() => undefined);
    throw translate(error);
  }

  const q = queriesFor(schema);
  const table = `${schema}.events`;
  const changes = new ChangeSignal();
  const listener = new FeedListener(
    config.pool === undefined ? { connectionString: config.connectionString as string } : { pool },
    feedChannel(schema),
    changes,
  );
  let closed = false;
  const live = () => {
    if (closed) throw new StoreClosedError(`the PostgreSQL store on schema ${schema}`);
  };
  const writable = () => {
    live();
    if (config.readOnly) throw new StorageError(`@sessionfold/store-postgres: schema ${schema} was opened read-only.`);
  };
  /** The commit time: read before the statement is sent, so a clock that fails leaves nothing half-written. */
  const now = () => readClock(config.clock);
  /** Runs one statement, translating whatever the driver throws. */
  const run = async <R>(work: () => Promise<R>): Promise<R> => {
    try {
      return await work();
    } catch (error) {
      throw translate(error);
    }
  };
  /**
   * Statements and connections under way. `close` waits for them before it ends the pool: a query still waiting
   * for a connection when the pool ends would never settle.
   */
  const inFlight = new Set<Promise<unknown>>();
  const tracked = <T>(work: Promise<T>): Promise<T> => {
    inFlight.add(work);
    const forget = () => inFlight.delete(work);
    work.then(forget, forget);
    return work;
  };
  const rows = async <T>(query: QueryConfig | QueryArrayConfig): Promise<T[]> => run(async () => (await tracked(pool.query(query as QueryConfig))).rows as T[]);

  /** The statement appending `jobs` in order. */
  const appendStatement = (jobs: readonly AppendJob[], at: string) => {
    const streams: string[] = [];
    const expected: number[] = [];
    const counts: number[] = [];
    const types: string[] = [];
    const data: string[] = [];
    const ids: Array<string | null> = [];
    const versions: number[] = [];
    for (const job of jobs) {
      streams.push(job.stream);
      expected.push(expectedCode(job.expected));
      counts.push(job.rows.length);
      for (const row of job.rows) {
        types.push(row.type);
        data.push(row.dataJson);
        ids.push(row.eventId ?? null);
        versions.push(row.schemaVersion);
      }
    }
    return q.appendBatches([streams, expected, counts, types, data, ids, versions, at]);
  };
  type AnswerRow = { status: number; revision: number; pos: number | null };
  const answerOf = (row: AnswerRow): JobAnswer => ({ status: row.status, revision: row.revision, position: row.pos });

  const commits = new GroupCommit(async (jobs: readonly AppendJob[]): Promise<JobAnswer[]> => {
    // One commit time for the group. A clock that fails rejects every append of the group with
    // InvalidInputError before anything is sent: the group is one transaction, there is no time to give it.
    const at = now();
    const started = performance.now();
    const answers = (await tracked(pool.query<AnswerRow>(appendStatement(jobs, at)))).rows.map(answerOf);
    const syncMs = performance.now() - started;
    const written = jobs.filter((_, index) => answers[index]?.status === 0);
    if (written.length > 0) {
      changes.notify();
      if (observed) {
        const events = written.reduce((sum, job) => sum + job.rows.length, 0);
        observe('flushed', { appends: written.length, events, bytes: written.reduce((sum, job) => sum + job.bytes, 0), syncMs });
      }
    }
    return answers;
  }, translate);

  const missing = (stream: StreamId, revision: number) => corrupt(new CorruptionError(table, undefined, `stream ${stream} lacks revision ${revision}`));

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

  /** The feed from the read options' position, each record built by `fromRow`. */
  const feedPaged = <T>(readOptions: unknown, fromRow: (row: EventRow) => T): PagedEvents<T> => {
    live();
    let next = validateReadAllOptions(readOptions);
    // Bounded by the last position when the first page is read, like a snapshot of the feed; a consumer
    // goes on from where it stopped. Every write holds the counter until it commits, so whatever a
    // statement sees of the feed is a prefix of it: a later page can never reveal a position before one seen.
    let last: number | undefined;
    return new PagedEvents(
      [],
      async () => {
        live();
        let page: EventRow[];
        let size = LATER_PAGE_SIZE;
        if (last === undefined) {
          size = PAGE_SIZE;
          const result = await rows<[number, ...EventRow]>(q.feedFirst([next]));
          const top = result[0] as [number, ...EventRow];
          last = top[0];
          if (top[1] === null) return undefined;
          page = result.map((row) => row.slice(1) as unknown as EventRow);
        } else {
          if (next > last) return undefined;
          page = await rows<EventRow>(q.feedPage([next]));
        }
        const bound = last;
        const kept = page.length > 0 && (page[page.length - 1] as EventRow)[0] > bound ? page.filter((row) => row[0] <= bound) : page;
        const end = kept[kept.length - 1];
        // A short page is the end of the table as this statement saw it: nothing more up to the bound.
        next = end === undefined || kept.length < size ? bound + 1 : end[0] + 1;
        return kept.length === 0 ? undefined : kept;
      },
      fromRow,
    );
  };

  const store: PostgresEventStore = {
    append(stream, events, appendOptions) {
      const started = observed ? performance.now() : 0;
      let batch: ValidatedAppend;
      try {
        writable();
        // Only what validation read is written: the caller's objects are not looked at again. Validation
        // also refuses what a text column cannot hold as given (U+0000, lone surrogates), so such an append
        // fails alone, before it joins a group.
        batch = validateAppend(stream, events, appendOptions, config.maxEventBytes);
      } catch (error) {
        return Promise.reject(error);
      }
      // Counted once, and only for an observer.
      const bytes = observed ? eventBytes(batch.events) : 0;
      const committed = commits.submit({ stream, expected: batch.expectedRevision, rows: batch.events, bytes });
      if (!observed) return committed;
      return committed.then((result) => {
        observe('appendCommitted', { stream, events: batch.events.length, bytes, durationMs: performance.now() - started });
        return result;
      });
    },

    async read(stream, readOptions): Promise<StreamRead> {
      return readPaged(stream, readOptions, eventFromRow);
    },

    readAll(readOptions) {
      return feedPaged(readOptions, eventFromRow);
    },

    async readStored(stream, readOptions): Promise<StoredStreamRead> {
      return readPaged(stream, readOptions, storedEventFromRow);
    },

    readAllStored(readOptions) {
      return feedPaged(readOptions, storedEventFromRow);
    },

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

    async compact(stream, snapshot) {
      writable();
      const validated = validateSnapshot(stream, snapshot);
      const { revision } = validated;
      const at = now();
      const started = performance.now();
      const [row] = await rows<{ status: number; dropped: number }>(q.compact([stream, revision, snapshotJson(validated), at]));
      switch (row?.status) {
        case 0:
          changes.notify();
          observe('compacted', { stream, revision, droppedEvents: row.dropped, durationMs: performance.now() - started });
          return;
        case 1:
          throw new InvalidInputError('stream', `stream ${stream} does not exist`);
        case 2:
          throw new InvalidInputError('snapshot.revision', `revision ${revision} is past the stream's revision`);
        default:
          throw new InvalidInputError('snapshot.revision', `revision ${revision} is older than the stored snapshot's`);
      }
    },

    async restoreStream(stream, snapshot): Promise<AppendResult> {
      writable();
      validateNewStreamId(stream);
      const validated = validateSnapshot(stream, snapshot);
      const at = now();
      const [row] = await rows<{ status: number; value: number }>(q.restore([stream, validated.revision, snapshotJson(validated), at]));
      if (row === undefined || row.status !== 0) throw new ConcurrencyError(stream, 'no_stream', row?.value ?? 0);
      changes.notify();
      return { revision: validated.revision, position: row.value };
    },

    async deleteStream(stream, deleteOptions) {
      writable();
      validateStreamId(stream);
      const expected = validateWriteOptions(deleteOptions);
      const at = now();
      // Deleting nothing changes nothing, so this check needs no lock: a stream deleted before is refused.
      const [gone] = expected === 'never_existed' ? await rows<{ revision: number }>(q.deletedAmong([[stream]])) : [];
      if (gone) throw new ConcurrencyError(stream, expected, gone.revision);
      const [row] = await rows<{ matched: boolean; head: number }>(q.deleteStream([stream, expected === 'never_existed' ? 0 : expectedCode(expected), at]));
      if (row !== undefined && !row.matched) throw new ConcurrencyError(stream, expected, row.head);
      if (row !== undefined && row.head > 0) changes.notify();
    },

    async putBlob(stream, bytes) {
      writable();
      validateStreamId(stream);
      if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      // Copied now: the caller may reuse its buffer before the query is sent.
      await rows(q.putBlob([stream, sha256, Buffer.from(bytes)]));
      return sha256;
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

    async verify(verifyOptions) {
      live();
      const signal = validateSignalOption(verifyOptions);
      signal?.throwIfAborted();
      // A connection of its own: the check holds one read-only transaction from its first query to its last.
      const client = await run(() => tracked(pool.connect()));
      let broken = false;
      try {
        return await verifySchema(client, schema, signal);
      } catch (error) {
        if (signal?.aborted && error === signal.reason) throw error;
        broken = true;
        // Not `translate`: verify reports damage in its report; what it cannot read is not news for the observer.
        throw translateError(error, schema);
      } finally {
        client.release(broken ? true : undefined);
      }
    },

    follow(followOptions) {
      live();
      const { fromPosition, signal, keepAlive } = validateFollowOptions(followOptions);
      listener.start();
      return followFeed(
        {
          readAll: (from) => store.readAll({ fromPosition: from }),
          changes,
          get pollMs() {
            return listener.listening ? POLL_MS : POLL_UNHEARD_MS;
          },
          // A restart or a killed connection passes: the pool connects anew on the next read.
          transient: transientFailure,
          observe,
        },
        fromPosition,
        signal,
        keepAlive,
      );
    },

    checkpoints: createCheckpointSlot({ schema, q, rows, writable, live, corrupt }),

    async status(): Promise<StoreStatus> {
      live();
      const [found, [sizes]] = await Promise.all([
        rows<[number, number | null, number, string, number]>(q.status([])),
        rows<[number, number, number, number, number, number]>(q.details([])),
      ]);
      const holdingBack = found.filter((row) => row[1] !== null).map(([, pid, ageMs, state, waiting]) => ({ pid: pid as number, ageMs, state, waiting }));
      const lastPosition = found[0]?.[0] ?? 0;
      const [schemaVersion, eventsBytes, blobsBytes, totalBytes, streamsEstimate, eventsEstimate] = sizes ?? [0, 0, 0, 0, 0, 0];
      return {
        kind: 'postgres',
        lastPosition,
        holdingBack,
        details: {
          schema: config.schema,
          schemaVersion,
          readOnly: config.readOnly,
          oldestHoldingPid: holdingBack[0]?.pid ?? null,
          // Table sizes with their indexes and TOAST; row counts are the planner's estimates (exact after ANALYZE).
          totalBytes,
          eventsBytes,
          blobsBytes,
          streamsEstimate,
          eventsEstimate,
          following: listener.listening,
        },
      };
    },

    async close() {
      if (closed) return;
      // Appends already accepted are committed first; then the pool is ended, if it is the store's own.
      await commits.drain();
      closed = true;
      changes.close();
      // Later pages and calls find the store closed; the statements already sent are answered first.
      await Promise.allSettled([...inFlight]);
      await listener.stop();
      await owned.release().catch((error: unknown) => {
        throw translate(error);
      });
    },

    [Symbol.asyncDispose]: () => store.close(),
  };
  return store;
}
