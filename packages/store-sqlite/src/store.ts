import { createHash } from 'node:crypto';
import {
  CorruptionError,
  InvalidInputError,
  StorageError,
  StoreClosedError,
  validateAppend,
  validateExpectedRevision,
  validateFrom,
  validateSha256,
  validateSnapshot,
  validateStreamId,
  type EventStore,
} from '@sessionfold/core/kernel';
import { openConnection } from './connection.js';
import { guarded, translateError } from './errors.js';
import { GroupCommit } from './group-commit.js';
import { readOptions, type SqliteStoreOptions } from './options.js';
import { PAGE_SIZE, createReads } from './reads.js';
import { prepareStatements } from './statements.js';
import { createWrites, type NewRow } from './writes.js';

/**
 * An `EventStore` in one SQLite file (WAL mode), shared safely by several processes: every write takes the
 * database's write lock (`BEGIN IMMEDIATE`) and checks the expected revision inside that transaction.
 * Writes in flight together in one process share one transaction and one sync to disk (group commit).
 * Throws `CorruptionError` for a damaged or non-SQLite file and `StorageError` for a newer schema.
 */
export function sqliteStore(options: SqliteStoreOptions): EventStore {
  const config = readOptions(options);
  const { path } = config;
  // A poisoned error (a failed write or sync) makes the store refuse writes until it is reopened.
  let poisonedBy: StorageError | undefined;
  const translate = (error: unknown) => {
    const translated = translateError(error, path, config.busyTimeoutMs);
    if (translated instanceof StorageError && translated.poisoned) poisonedBy ??= translated;
    return translated;
  };
  const db = guarded(translate, () => openConnection(config));
  // Preparing reads the schema, which is where a damaged schema page shows: release the file then too.
  const s = guarded(translate, () => {
    try {
      return prepareStatements(db);
    } catch (error) {
      db.close();
      throw error;
    }
  });

  let closed = false;
  const live = () => {
    if (closed) throw new StoreClosedError(`the SQLite store at ${path}`);
  };
  const writable = () => {
    live();
    if (config.readOnly) throw new StorageError(`@sessionfold/store-sqlite: ${path} was opened read-only`);
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

  // One commit time per transaction: every event of a group commit carries the time of that commit.
  let commitTime: string | undefined;
  const writes = createWrites(s, () => (commitTime ??= config.clock().toISOString()));
  const reads = createReads(s, path, guard);
  const commits = new GroupCommit(
    {
      beginImmediate: () => {
        s.beginImmediate.run();
        commitTime = undefined;
        writes.reset();
      },
      commit: () => {
        writes.beforeCommit();
        s.commit.run();
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

  return {
    append(stream, events, appendOptions) {
      // Not an async function: an append in a hot loop saves a promise and two turns of the microtask queue.
      let rows: NewRow[];
      try {
        writable();
        const json = validateAppend(stream, events, appendOptions, config.maxEventBytes);
        rows = events.map((event, index): NewRow => ({ type: event.type, data: json[index] as string, eventId: event.eventId ?? null }));
      } catch (error) {
        return Promise.reject(error);
      }
      const expected = appendOptions.expectedRevision;
      // Later event ids are refused by the unique index after earlier rows went in: those need a savepoint.
      const mayFailAfterWriting = rows.some((row, index) => index > 0 && row.eventId !== null);
      return commits.submit(() => writes.append(stream, rows, expected), { mayFailAfterWriting });
    },

    async read(stream, readOptions = {}) {
      live();
      validateStreamId(stream);
      validateFrom('fromRevision', readOptions.fromRevision);
      return reads.read(stream, readOptions.fromRevision ?? 1);
    },

    readAll(readOptions = {}) {
      live();
      validateFrom('fromPosition', readOptions.fromPosition);
      return reads.feed(readOptions.fromPosition ?? 1);
    },

    async *streams(listOptions = {}) {
      live();
      const prefix = listOptions.prefix ?? '';
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
      validateSnapshot(stream, snapshot);
      const json = JSON.stringify(snapshot);
      return commits.submit(() => writes.compact(stream, snapshot.revision, json));
    },

    async restoreStream(stream, snapshot) {
      writable();
      validateSnapshot(stream, snapshot);
      const json = JSON.stringify(snapshot);
      return commits.submit(() => writes.restore(stream, snapshot.revision, json));
    },

    async deleteStream(stream, deleteOptions) {
      writable();
      validateStreamId(stream);
      validateExpectedRevision(deleteOptions?.expectedRevision);
      const expected = deleteOptions.expectedRevision;
      return commits.submit(() => writes.delete(stream, expected));
    },

    async putBlob(stream, bytes) {
      writable();
      validateStreamId(stream);
      if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      // Copied now: the caller may reuse its buffer before the shared commit runs.
      const copy = Buffer.from(bytes);
      return commits.submit(() => writes.putBlob(stream, sha256, copy));
    },

    async getBlob(sha256) {
      live();
      validateSha256(sha256);
      const bytes = guard(() => s.blobBytes.get(sha256) as Uint8Array | undefined);
      if (bytes === undefined) return undefined;
      if (createHash('sha256').update(bytes).digest('hex') !== sha256) {
        throw new CorruptionError(path, undefined, `table blobs: the bytes of blob ${sha256} do not match their sha256`);
      }
      // A copy the caller owns, as a plain Uint8Array (not the driver's Buffer).
      return new Uint8Array(bytes);
    },

    async *blobs(stream) {
      live();
      validateStreamId(stream);
      yield* reads.ownedBlobs(stream);
    },

    async close() {
      if (closed) return;
      // Writes already accepted are committed first; then the connection (and its WAL) is released.
      commits.flush();
      closed = true;
      guarded(translate, () => db.close());
    },
  };
}
