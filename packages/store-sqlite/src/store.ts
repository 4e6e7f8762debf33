import { createHash } from 'node:crypto';
import { CorruptionError, InvalidInputError, StorageError, StoreClosedError, type CompleteEventStore, type StoreStatus } from '@sessionfold/core/kernel';
import {
  eventBytes,
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
  ChangeSignal,
  eventFromRow,
  storedEventFromRow,
  followFeed,
  validateFollowOptions,
  type ValidatedAppend,
} from '@sessionfold/core/store-kit';
import { createCheckpointSlot, ensureStoreId } from './checkpoint-slot.js';
import { openConnection } from './connection.js';
import { guarded, transientFailure, translateError } from './errors.js';
import { GroupCommit, type JobOptions } from './group-commit.js';
import { readOptions, type SqliteStoreOptions } from './options.js';
import { PAGE_SIZE, createReads } from './reads.js';
import { prepareStatements } from './statements.js';
import { readStatus } from './status.js';
import { verifyDatabase } from './verify.js';
import { createWrites } from './writes.js';

/**
 * How often a follower asks SQLite whether another connection committed (`PRAGMA data_version`, a read of the
 * shared-memory header, no disk I/O): a change made by another process is yielded within about this long plus
 * one feed query, documented as at most 100 ms. Commits of this store object wake followers at once.
 */
const FOLLOW_POLL_MS = 50;

/** The port with every optional member there (`CompleteEventStore`). */
export interface SqliteEventStore extends CompleteEventStore {
  /** The feed's last position, and the file's sizes, journal mode, schema version and write lock as `details`. */
  status(): Promise<StoreStatus>;
}

/**
 * An `EventStore` in one SQLite file (WAL mode), shared safely by several processes: every write takes the
 * database's write lock (`BEGIN IMMEDIATE`) and checks the expected revision inside that transaction.
 * Writes in flight together in one process share one transaction and one sync to disk (group commit).
 * Rejects with `CorruptionError` for a damaged or non-SQLite file and `StorageError` for a newer schema.
 */
export async function sqliteStore(options: SqliteStoreOptions): Promise<SqliteEventStore> {
  const config = readOptions(options);
  const { path, observe, observed } = config;
  // Each damage is told once, however many layers translate it on its way out.
  const told = new WeakSet<CorruptionError>();
  const corrupt = <T extends Error>(error: T): T => {
    if (error instanceof CorruptionError && !told.has(error)) {
      told.add(error);
      observe('corruptionFound', { error });
    }
    return error;
  };
  // What makes the store refuse writes until it is reopened: a failed write or sync (what reached the disk is
  // unknown), or damage met by any read or write (a write must never build on a page SQLite cannot read).
  let poisonedBy: StorageError | CorruptionError | undefined;
  const translate = (error: unknown) => {
    const translated = translateError(error, path, config.busyTimeoutMs);
    if ((translated instanceof StorageError && translated.poisoned) || translated instanceof CorruptionError) poisonedBy ??= translated;
    return corrupt(translated);
  };
  const db = guarded(translate, () => openConnection(config));
  // Preparing reads the schema, which is where a damaged schema page shows: release the file then too.
  const { s, storeId } = guarded(translate, () => {
    try {
      return { s: prepareStatements(db), storeId: ensureStoreId(db) };
    } catch (error) {
      db.close();
      throw error;
    }
  });
  const changes = new ChangeSignal();
  const dataVersion = db.prepare('PRAGMA data_version').pluck();

  let closed = false;
  const live = () => {
    if (closed) throw new StoreClosedError(`the SQLite store at ${path}`);
  };
  const writable = () => {
    live();
    if (config.readOnly) throw new StorageError(`@sessionfold/store-sqlite: ${path} was opened read-only`);
    if (poisonedBy instanceof CorruptionError) {
      throw new StorageError(
        `@sessionfold/store-sqlite: ${path}: damage was found in the database (${poisonedBy.message}); writes are refused ` +
          'so nothing is built on it. Restore the file from a backup (or recover it with the sqlite3 shell), then reopen the store.',
        { cause: poisonedBy, poisoned: true },
      );
    }
    if (poisonedBy) {
      throw new StorageError(`@sessionfold/store-sqlite: ${path}: a write failed on disk earlier; reopen the store to write again`, {
        cause: poisonedBy,
        poisoned: true,
      });
    }
  };
  const guard = <T>(work: () => T): T => {
    live();
    return guarded(translate, work);
  };

  // One commit time per transaction: every event of a group commit carries the time of that commit. A write
  // reads it before its first statement, so a clock that fails refuses that write alone, with nothing to undo.
  let commitTime: string | undefined;
  const writes = createWrites(s, () => (commitTime ??= readClock(config.clock)));
  // The appends of the transaction in progress, for the observer's `flushed`.
  let group = { appends: 0, events: 0, bytes: 0 };
  const reads = createReads(s, path, guard);
  const commits = new GroupCommit(
    {
      beginImmediate: () => {
        s.beginImmediate.run();
        commitTime = undefined;
        writes.reset();
        group = { appends: 0, events: 0, bytes: 0 };
      },
      commit: () => {
        writes.beforeCommit();
        const started = observed ? performance.now() : 0;
        s.commit.run();
        if (observed && group.appends > 0) observe('flushed', { ...group, syncMs: performance.now() - started });
        // Once per shared commit, and a counter increment when nobody follows.
        changes.notify();
      },
      rollback: () => {
        writes.reset();
        s.rollback.run();
      },
      savepoint: () => void s.savepoint.run(),
      release: () => void s.release.run(),
      rollbackToSavepoint: () => void s.rollbackToSavepoint.run(),
      inTransaction: () => db.inTransaction,
    },
    translate,
  );

  // Checked again when the job runs: a write queued before a read found damage must not build on it either.
  const submit = <T>(work: () => T, jobOptions?: JobOptions): Promise<T> =>
    commits.submit(() => {
      writable();
      return work();
    }, jobOptions);

  const store: SqliteEventStore = {
    append(stream, events, appendOptions) {
      // Not an async function: an append in a hot loop saves a promise and two turns of the microtask queue.
      let batch: ValidatedAppend;
      try {
        writable();
        // Only what validation read is written: the caller's objects are not looked at again.
        batch = validateAppend(stream, events, appendOptions, config.maxEventBytes);
      } catch (error) {
        return Promise.reject(error);
      }
      const rows = batch.events;
      // Later event ids are refused by the unique index after earlier rows went in: those need a savepoint.
      const mayFailAfterWriting = rows.some((row, index) => index > 0 && row.eventId !== undefined);
      if (!observed) return submit(() => writes.append(stream, rows, batch.expectedRevision), { mayFailAfterWriting });
      const started = performance.now();
      const bytes = eventBytes(rows);
      return submit(
        () => {
          const result = writes.append(stream, rows, batch.expectedRevision);
          // Reached only when the append wrote (a refused one threw): it is part of this transaction's commit.
          group.appends++;
          group.events += rows.length;
          group.bytes += bytes;
          return result;
        },
        { mayFailAfterWriting },
      ).then((result) => {
        observe('appendCommitted', { stream, events: rows.length, bytes, durationMs: performance.now() - started });
        return result;
      });
    },

    async read(stream, readOptions) {
      live();
      validateStreamId(stream);
      return reads.read(stream, validateReadOptions(readOptions), eventFromRow);
    },

    readAll(readOptions) {
      live();
      return reads.feed(validateReadAllOptions(readOptions), eventFromRow);
    },

    async readStored(stream, readOptions) {
      live();
      validateStreamId(stream);
      return reads.read(stream, validateReadOptions(readOptions), storedEventFromRow);
    },

    readAllStored(readOptions) {
      live();
      return reads.feed(validateReadAllOptions(readOptions), storedEventFromRow);
    },

    async *streams(listOptions) {
      live();
      const prefix = validateStreamsOptions(listOptions);
      let page = reads.streamsPage({ from: prefix });
      for (;;) {
        for (const row of page) {
          if (!row.stream.startsWith(prefix)) return;
          yield { stream: row.stream, revision: row.revision };
        }
        const last = page[page.length - 1];
        if (last === undefined || page.length < PAGE_SIZE) return;
        page = reads.streamsPage({ after: last.stream });
      }
    },

    async compact(stream, snapshot) {
      writable();
      const validated = validateSnapshot(stream, snapshot);
      const { revision } = validated;
      const started = performance.now();
      const droppedEvents = await submit(() => writes.compact(stream, revision, snapshotJson(validated)));
      observe('compacted', { stream, revision, droppedEvents, durationMs: performance.now() - started });
    },

    async restoreStream(stream, snapshot) {
      writable();
      validateNewStreamId(stream);
      const validated = validateSnapshot(stream, snapshot);
      return submit(() => writes.restore(stream, validated.revision, snapshotJson(validated)));
    },

    async deleteStream(stream, deleteOptions) {
      writable();
      validateStreamId(stream);
      const expected = validateWriteOptions(deleteOptions);
      return submit(() => writes.delete(stream, expected));
    },

    async putBlob(stream, bytes) {
      writable();
      validateStreamId(stream);
      if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      // Copied now: the caller may reuse its buffer before the shared commit runs.
      const copy = Buffer.from(bytes);
      return submit(() => writes.putBlob(stream, sha256, copy));
    },

    async getBlob(sha256) {
      live();
      validateSha256(sha256);
      const bytes = guard(() => s.blobBytes.get(sha256) as Uint8Array | undefined);
      if (bytes === undefined) return undefined;
      if (createHash('sha256').update(bytes).digest('hex') !== sha256) {
        throw corrupt(new CorruptionError(path, undefined, `table blobs: the bytes of blob ${sha256} do not match their sha256`));
      }
      // A copy the caller owns, as a plain Uint8Array (not the driver's Buffer).
      return new Uint8Array(bytes);
    },

    async *blobs(stream) {
      live();
      validateStreamId(stream);
      yield* reads.ownedBlobs(stream);
    },

    async verify(verifyOptions) {
      live();
      const signal = verifyOptions?.signal;
      try {
        return await verifyDatabase(path, config.busyTimeoutMs, signal);
      } catch (error) {
        if (signal?.aborted && error === signal.reason) throw error;
        // Not `translate`: verify reports damage instead of acting on it, so what it cannot read poisons nothing.
        throw translateError(error, path, config.busyTimeoutMs);
      }
    },

    follow(followOptions) {
      live();
      const { fromPosition, signal, keepAlive } = validateFollowOptions(followOptions);
      // Each follower keeps the version it last saw: one follower's look must not hide a change from another.
      // Taken before the first read, so a commit elsewhere after it is found by the first poll.
      let seenDataVersion = guard(() => dataVersion.get());
      return followFeed(
        {
          readAll: (from) => (live(), reads.feed(from, eventFromRow)),
          changes,
          pollMs: FOLLOW_POLL_MS,
          // data_version moves when another connection commits; this connection's own commits notify directly.
          changedElsewhere: () => {
            const version = guard(() => dataVersion.get());
            if (version === seenDataVersion) return false;
            seenDataVersion = version;
            return true;
          },
          // Another connection holding the database past the busy timeout passes; the follow reads again after it.
          transient: transientFailure,
          observe,
        },
        fromPosition,
        signal,
        keepAlive,
      );
    },

    checkpoints: createCheckpointSlot({ db, path, storeId, guard, submit, writable, corrupt }),

    async status() {
      return guard(() => readStatus({ db, path, readOnly: config.readOnly, busyTimeoutMs: config.busyTimeoutMs, lastPosition: s.lastPosition }));
    },

    async close() {
      if (closed) return;
      // Writes already accepted are committed first; then the connection (and its WAL) is released.
      commits.flush();
      closed = true;
      changes.close();
      guarded(translate, () => db.close());
    },

    [Symbol.asyncDispose]: () => store.close(),
  };
  return store;
}
