import { createHash } from 'node:crypto';
import { chmodSync, existsSync } from 'node:fs';
import {
  ConcurrencyError,
  CorruptionError,
  DEFAULT_MAX_EVENT_BYTES,
  DELETED_RECORD,
  InvalidInputError,
  SNAPSHOT_RECORD,
  StoreClosedError,
  revisionMatches,
  validateAppend,
  validateExpectedRevision,
  validateFrom,
  validateSha256,
  validateSnapshot,
  validateStreamId,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type Snapshot,
  type StreamId,
  type StreamRead,
} from '@sessionfold/core';
import { openDatabase, type SqliteDatabase, type SqliteStatement } from './database.js';
import { sqliteCode, translateError } from './errors.js';
import { GroupCommit } from './group-commit.js';
import { Column, PagedEvents, type EventRow } from './paged-events.js';
import { Kind, checkVersion, migrate } from './schema.js';
import { prepareStatements } from './statements.js';

/** Options of `sqliteStore`. */
export interface SqliteStoreOptions {
  /** The database file; created (mode 0600) when missing. Several processes may open the same file. */
  path: string;
  /**
   * `'FULL'` (default): an acknowledged write survives a power loss or OS crash (the WAL is synced on every
   * commit). `'NORMAL'`: an acknowledged write survives a process crash; a power loss may undo the last commits.
   */
  synchronous?: 'FULL' | 'NORMAL';
  /** How long a write waits for another connection's lock before failing with `StorageError` (default 5000 ms). */
  busyTimeoutMs?: number;
  /** Largest serialized event in bytes (default 1 MiB). */
  maxEventBytes?: number;
  /** Source of `recordedAt` (default: the system clock). */
  clock?: () => Date;
}

/** Rows read per query when streaming a stream or the feed: bounded memory, few round trips. */
const PAGE_SIZE = 512;

interface Config {
  readonly path: string;
  readonly synchronous: 'FULL' | 'NORMAL';
  readonly busyTimeoutMs: number;
  readonly maxEventBytes: number;
  readonly clock: () => Date;
}

interface NewRow {
  type: string;
  data: string;
  eventId: string | null;
}

/**
 * An `EventStore` in one SQLite file (WAL mode), shared safely by several processes: every write takes the
 * database's write lock (`BEGIN IMMEDIATE`) and checks the expected revision inside that transaction.
 * Writes in flight together in one process share one transaction and one sync to disk (group commit).
 * Throws `CorruptionError` for a damaged or non-SQLite file and `StorageError` for a newer schema.
 */
export function sqliteStore(options: SqliteStoreOptions): EventStore {
  const config = readOptions(options);
  const { path } = config;
  const translate = (error: unknown) => translateError(error, path, config.busyTimeoutMs);
  const created = !existsSync(path);
  const db = open(config, translate);
  if (created) chmodSync(path, 0o600);
  const s = guard(translate, () => prepareStatements(db));

  let closed = false;
  let commitTime: string | undefined;
  const recordedAt = () => (commitTime ??= config.clock().toISOString());
  const commits = new GroupCommit(
    {
      beginImmediate: () => {
        s.beginImmediate.run();
        commitTime = undefined;
      },
      commit: () => void s.commit.run(),
      rollback: () => void s.rollback.run(),
      savepoint: () => void s.savepoint.run(),
      release: () => void s.release.run(),
      rollbackToSavepoint: () => void s.rollbackToSavepoint.run(),
      inTransaction: () => db.inTransaction,
    },
    translate,
  );

  const live = () => {
    if (closed) throw new StoreClosedError(`the SQLite store at ${path}`);
  };
  const run = <T>(work: () => T): T => guard(translate, work);
  const headOf = (stream: StreamId) => (s.headRevision.get(stream) as number | undefined) ?? 0;
  const setHead = (stream: StreamId, from: number, to: number) => {
    if (from === 0) s.insertHead.run(stream, to);
    else s.updateHead.run(to, stream);
  };
  const insertRecord = (stream: StreamId, kind: number, revision: number, type: string, data: string) =>
    Number(s.insertRecord.run(stream, kind, revision, type, data, recordedAt()).lastInsertRowid);

  /** Runs inside the shared write transaction: idempotency, the revision check, then the inserts. */
  const appendNow = (stream: StreamId, rows: readonly NewRow[], expected: ExpectedRevision): AppendResult => {
    const firstId = (rows[0] as NewRow).eventId;
    if (firstId !== null) {
      const earlier = s.findEventId.get(stream, firstId) as { revision: number; position: number; batch_end: number } | undefined;
      if (earlier) return { revision: earlier.batch_end, position: earlier.position + earlier.batch_end - earlier.revision };
    }
    const head = headOf(stream);
    if (!revisionMatches(expected, head)) {
      // An id already in the stream is the caller's mistake whatever the revision: report that first.
      rows.forEach((row, index) => {
        if (index > 0 && row.eventId !== null && s.findEventId.get(stream, row.eventId) !== undefined) throw knownEventId(stream, row, index);
      });
      throw new ConcurrencyError(stream, expected, head);
    }
    const end = head + rows.length;
    const at = recordedAt();
    let position = 0;
    rows.forEach((row, index) => {
      try {
        const batchEnd = row.eventId === null ? null : end;
        position = Number(s.insertEvent.run(stream, head + index + 1, row.type, row.data, row.eventId, batchEnd, at).lastInsertRowid);
      } catch (error) {
        if (row.eventId !== null && sqliteCode(error) === 'SQLITE_CONSTRAINT_UNIQUE' && String(error).includes('event_id')) {
          throw knownEventId(stream, row, index, error);
        }
        throw error;
      }
    });
    setHead(stream, head, end);
    return { revision: end, position };
  };

  /** Reads one page of a stream's events; the rows are in memory before anything is handed out. */
  const streamPage = (stream: StreamId, from: number, to: number, maxPosition: number) =>
    collect<EventRow>(s.streamPage, [stream, from, to, maxPosition, PAGE_SIZE]);

  /**
   * The pages after the first of a stream read, each in its own read transaction. The position bound keeps
   * out a stream deleted and recreated meanwhile; a gap means the stream was compacted or deleted while it
   * was being read, which is reported instead of skipping events.
   */
  const laterPages = (stream: StreamId, from: number, head: number, maxPosition: number) => {
    let next = from;
    return (): readonly EventRow[] | undefined => {
      if (next > head) return undefined;
      live();
      const page = run(() => streamPage(stream, next, head, maxPosition));
      page.forEach((row) => {
        if (row[Column.revision] !== next++) throw new ConcurrencyError(stream, head, run(() => headOf(stream)));
      });
      if (page.length === 0) throw new ConcurrencyError(stream, head, run(() => headOf(stream)));
      return page;
    };
  };

  /** The feed from `from` to `last` inclusive, a page at a time. */
  const feedPages = (from: number, last: number) => {
    let next = from;
    return (): readonly EventRow[] | undefined => {
      if (next > last) return undefined;
      live();
      const page = run(() => collect<EventRow>(s.feedPage, [next, last, PAGE_SIZE]));
      const end = page[page.length - 1];
      next = end === undefined ? last + 1 : end[Column.position] + 1;
      return page;
    };
  };

  return {
    append(stream, events, appendOptions) {
      // Not an async function: an append in a hot loop saves a promise and two turns of the microtask queue.
      let rows: NewRow[];
      try {
        live();
        const json = validateAppend(stream, events, appendOptions, config.maxEventBytes);
        rows = events.map((event, index): NewRow => ({ type: event.type, data: json[index] as string, eventId: event.eventId ?? null }));
      } catch (error) {
        return Promise.reject(error);
      }
      const expected = appendOptions.expectedRevision;
      // Later event ids are refused by the unique index after earlier rows went in: those need a savepoint.
      const mayFailAfterWriting = rows.some((row, index) => index > 0 && row.eventId !== null);
      return commits.submit(() => appendNow(stream, rows, expected), { mayFailAfterWriting });
    },

    async read(stream, readOptions = {}): Promise<StreamRead> {
      live();
      validateStreamId(stream);
      validateFrom('fromRevision', readOptions.fromRevision);
      const from = readOptions.fromRevision ?? 1;
      return run(() => {
        // One read transaction: the revision, the snapshot and the first page are of the same commit.
        s.begin.run();
        try {
          const head = headOf(stream);
          if (head === 0) return { revision: 0, events: new PagedEvents([]) };
          const record = s.snapshotRecord.get(stream) as { revision: number; data: string } | undefined;
          const snapshot = record && record.revision >= from ? (JSON.parse(record.data) as Snapshot) : undefined;
          const start = snapshot ? snapshot.revision + 1 : from;
          const first = start > head ? [] : streamPage(stream, start, head, Number.MAX_SAFE_INTEGER);
          first.forEach((row, index) => {
            if (row[Column.revision] !== start + index) throw missing(path, stream, start + index);
          });
          const reached = start + first.length;
          if (first.length < PAGE_SIZE && reached <= head) throw missing(path, stream, reached);
          const rest = reached <= head ? laterPages(stream, reached, head, Number(s.lastPosition.get())) : undefined;
          return { revision: head, ...(snapshot ? { snapshot } : {}), events: new PagedEvents(first, rest) };
        } finally {
          s.commit.run();
        }
      });
    },

    readAll(readOptions = {}) {
      live();
      validateFrom('fromPosition', readOptions.fromPosition);
      // Bounded by the last position when called, as a snapshot of the feed; a consumer continues from there.
      const last = run(() => Number(s.lastPosition.get() ?? 0));
      return new PagedEvents([], feedPages(readOptions.fromPosition ?? 1, last));
    },

    async *streams(listOptions = {}) {
      live();
      const prefix = listOptions.prefix ?? '';
      let page = run(() => collect<{ stream: string; revision: number }>(s.streamsFrom, [prefix, PAGE_SIZE]));
      for (;;) {
        for (const row of page) {
          if (!row.stream.startsWith(prefix)) return;
          yield { stream: row.stream, revision: row.revision };
        }
        if (page.length < PAGE_SIZE) return;
        live();
        const after = (page[page.length - 1] as { stream: string }).stream;
        page = run(() => collect<{ stream: string; revision: number }>(s.streamsAfter, [after, PAGE_SIZE]));
      }
    },

    async compact(stream, snapshot) {
      live();
      validateSnapshot(stream, snapshot);
      const data = JSON.stringify(snapshot);
      const revision = snapshot.revision;
      return commits.submit(() => {
        const head = headOf(stream);
        if (head === 0) throw new InvalidInputError('stream', `stream ${stream} does not exist`);
        if (revision > head) throw new InvalidInputError('snapshot.revision', `revision ${revision} is past the stream's revision ${head}`);
        const current = s.snapshotRecord.get(stream) as { revision: number } | undefined;
        if (current && revision < current.revision) {
          throw new InvalidInputError('snapshot.revision', `revision ${revision} is older than the stored snapshot's ${current.revision}`);
        }
        // The new record goes in before anything is deleted, so the largest position never goes back
        // (positions are rowids: SQLite hands out max + 1).
        const position = insertRecord(stream, Kind.snapshot, revision, SNAPSHOT_RECORD, data);
        s.deleteEventsThrough.run(stream, revision);
        s.deleteRecordsOfKind.run(stream, Kind.snapshot, position);
      });
    },

    async restoreStream(stream, snapshot) {
      live();
      validateSnapshot(stream, snapshot);
      const data = JSON.stringify(snapshot);
      const revision = snapshot.revision;
      return commits.submit((): AppendResult => {
        const head = headOf(stream);
        if (head !== 0) throw new ConcurrencyError(stream, 'no_stream', head);
        const position = insertRecord(stream, Kind.snapshot, revision, SNAPSHOT_RECORD, data);
        setHead(stream, 0, revision);
        return { revision, position };
      });
    },

    async deleteStream(stream, deleteOptions) {
      live();
      validateStreamId(stream);
      validateExpectedRevision(deleteOptions?.expectedRevision);
      const expected = deleteOptions.expectedRevision;
      return commits.submit(() => {
        const head = headOf(stream);
        if (!revisionMatches(expected, head)) throw new ConcurrencyError(stream, expected, head);
        if (head === 0) return;
        const position = insertRecord(stream, Kind.deleted, head, DELETED_RECORD, 'null');
        s.deleteAllEvents.run(stream);
        s.deleteAllRecords.run(stream, position);
        s.deleteHead.run(stream);
        s.deleteOrphanBlobs.run(stream, stream);
        s.deleteBlobOwners.run(stream);
      });
    },

    async putBlob(stream, bytes) {
      live();
      validateStreamId(stream);
      if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
      const sha = createHash('sha256').update(bytes).digest('hex');
      // Copied now: the caller may reuse its buffer before the shared commit runs.
      const copy = Buffer.from(bytes);
      return commits.submit(() => {
        s.insertBlob.run(sha, copy);
        s.insertBlobOwner.run(stream, sha);
        return sha;
      });
    },

    async getBlob(sha256) {
      live();
      validateSha256(sha256);
      const bytes = run(() => s.blobBytes.get(sha256) as Uint8Array | undefined);
      if (bytes === undefined) return undefined;
      if (createHash('sha256').update(bytes).digest('hex') !== sha256) {
        throw new CorruptionError(path, undefined, `table blobs: the bytes of blob ${sha256} do not match their sha256`);
      }
      return Uint8Array.from(bytes);
    },

    async *blobs(stream) {
      live();
      validateStreamId(stream);
      const owned = run(() => collect<string>(s.ownedBlobs, [stream]));
      yield* owned;
    },

    async close() {
      if (closed) return;
      // Writes already accepted are committed first; then the connection (and its WAL) is released.
      commits.flush();
      closed = true;
      run(() => db.close());
    },
  };
}

function readOptions(options: SqliteStoreOptions): Config {
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('options', '@sessionfold/store-sqlite: expected { path }');
  const { path, synchronous = 'FULL', busyTimeoutMs = 5000, maxEventBytes = DEFAULT_MAX_EVENT_BYTES, clock = () => new Date() } = options;
  if (typeof path !== 'string' || path.length === 0) throw new InvalidInputError('path', '@sessionfold/store-sqlite: the option `path` is required');
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL') throw new InvalidInputError('synchronous', "expected 'FULL' or 'NORMAL'");
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) throw new InvalidInputError('busyTimeoutMs', 'expected an integer ≥ 0');
  if (!Number.isSafeInteger(maxEventBytes) || maxEventBytes < 1) throw new InvalidInputError('maxEventBytes', 'expected an integer ≥ 1');
  if (typeof clock !== 'function') throw new InvalidInputError('clock', 'expected a function returning a Date');
  return Object.freeze({ path, synchronous, busyTimeoutMs, maxEventBytes, clock });
}

/** Opens the file, refuses what it must not touch before writing anything, then enables WAL and migrates. */
function open(config: Config, translate: (error: unknown) => Error): SqliteDatabase {
  const db = guard(translate, () => openDatabase(config.path, config.busyTimeoutMs));
  try {
    checkVersion(db, config.path);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${config.synchronous}`);
    // Savepoints keep copies of the pages they change in a sub-journal; memory is the cheap place for it.
    db.pragma('temp_store = MEMORY');
    migrate(db, config.path);
    return db;
  } catch (error) {
    db.close();
    throw translate(error);
  }
}

function guard<T>(translate: (error: unknown) => Error, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw translate(error);
  }
}

/** Runs a statement to completion into an array, so the connection is free again before anything is yielded. */
function collect<T>(statement: SqliteStatement, params: readonly unknown[]): T[] {
  const rows: T[] = [];
  for (const row of statement.iterate(...params)) rows.push(row as T);
  return rows;
}

function missing(path: string, stream: StreamId, revision: number): CorruptionError {
  return new CorruptionError(path, undefined, `table events: stream ${stream} lacks revision ${revision}`);
}

function knownEventId(stream: StreamId, row: NewRow, index: number, cause?: unknown): InvalidInputError {
  return new InvalidInputError(`events[${index}].eventId`, `${JSON.stringify(row.eventId)} is already in stream ${stream}`, { cause });
}
