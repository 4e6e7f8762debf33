import { ConcurrencyError, InvalidInputError, StorageError } from '@sessionfold/core/kernel';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { GroupCommit, type TransactionControl } from './group-commit.js';
import { sqliteStore } from './index.js';
import { freshPath, randomStream } from './test-support.fixture.js';

/** A clock that moves one millisecond per call, so each commit's `recordedAt` is distinct. */
function tickingClock(): () => Date {
  let now = Date.UTC(2026, 0, 1);
  return () => new Date(now++);
}

/** Frames in the WAL: each commit appends at least one frame per page it changed. */
function walFrames(raw: Database.Database): number {
  const [result] = raw.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
  return result?.log ?? 0;
}

describe('group commit', () => {
  it('commits 64 appends in flight together in one transaction, failing only the one that conflicts', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path, clock: tickingClock() });
    const contested = randomStream();
    await store.append(contested, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' });
    const raw = new Database(path);
    raw.pragma('wal_checkpoint(TRUNCATE)');
    const revisionSeenByAnotherConnection = (stream: string) =>
      raw.prepare('SELECT count(*) FROM events WHERE stream = ? AND kind = 0').pluck().get(stream) as number;

    const streams = Array.from({ length: 63 }, () => randomStream());
    const seenAtResolve: number[] = [];
    const appends = streams.map((stream) =>
      store.append(stream, [{ type: 'Opened', data: { stream } }], { expectedRevision: 'no_stream' }).then((result) => {
        seenAtResolve.push(revisionSeenByAnotherConnection(stream));
        return result;
      }),
    );
    const conflicting = store.append(contested, [{ type: 'Noted', data: null }], { expectedRevision: 'no_stream' });
    const settled = await Promise.allSettled([...appends, conflicting]);

    const failed = settled.filter((result) => result.status === 'rejected');
    expect(failed).toHaveLength(1);
    const conflict = (failed[0] as PromiseRejectedResult).reason as ConcurrencyError;
    expect(conflict).toBeInstanceOf(ConcurrencyError);
    expect(conflict).toMatchObject({ stream: contested, expected: 'no_stream', actual: 1 });
    // Every caller was answered after the shared commit: another connection already saw its event.
    expect(seenAtResolve).toEqual(streams.map(() => 1));
    // One commit: one recordedAt for all, and far fewer WAL frames than 63 separate commits would write.
    const recordedAt = raw.prepare('SELECT DISTINCT recorded_at FROM events WHERE position > 1').pluck().all();
    expect(recordedAt).toHaveLength(1);
    expect(walFrames(raw)).toBeLessThan(63);
    expect(revisionSeenByAnotherConnection(contested)).toBe(1);
    raw.close();
    await store.close();
  });

  it('checks each append in a shared transaction against the appends before it', async () => {
    const store = await sqliteStore({ path: freshPath(), clock: tickingClock() });
    const stream = randomStream();
    const results = await Promise.allSettled([
      store.append(stream, [{ type: 'Opened', data: 1 }], { expectedRevision: 'no_stream' }),
      store.append(
        stream,
        [
          { type: 'Noted', data: 2 },
          { type: 'Noted', data: 3 },
        ],
        { expectedRevision: 1 },
      ),
      store.append(stream, [{ type: 'Noted', data: 'stale' }], { expectedRevision: 1 }),
      store.append(stream, [{ type: 'Closed', data: 4 }], { expectedRevision: 3 }),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'concurrency_conflict', actual: 3 });
    expect((results[3] as PromiseFulfilledResult<unknown>).value).toEqual({ revision: 4, position: 4 });
    await store.close();
  });

  it('rolls back alone the rows of an append whose later event id is already in the stream, inside a shared transaction', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path, clock: tickingClock() });
    const stream = randomStream();
    const other = randomStream();
    await store.append(stream, [{ type: 'Opened', data: null, eventId: 'known' }], { expectedRevision: 'no_stream' });
    const settled = await Promise.allSettled([
      store.append(other, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' }),
      store.append(
        stream,
        [
          { type: 'Noted', data: 'new', eventId: 'fresh' },
          { type: 'Noted', data: 'again', eventId: 'known' },
        ],
        { expectedRevision: 1 },
      ),
      store.append(stream, [{ type: 'Noted', data: 'next' }], { expectedRevision: 1 }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'invalid_input', field: 'events[1].eventId' });
    expect((settled[2] as PromiseFulfilledResult<unknown>).value).toMatchObject({ revision: 2 });
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare('SELECT data FROM events WHERE stream = ? AND kind = 0 ORDER BY revision').pluck().all(stream)).toEqual(['null', '"next"']);
    expect(raw.prepare('SELECT count(DISTINCT recorded_at) FROM events WHERE position > 1').pluck().get()).toBe(1);
    raw.close();
    // The id of the refused batch's first event was not kept: it can be appended now.
    expect(await store.append(stream, [{ type: 'Noted', data: 'new', eventId: 'fresh' }], { expectedRevision: 2 })).toMatchObject({ revision: 3 });
    await store.close();
  });

  it('shares one commit among appends issued by separate callbacks of one event-loop turn', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path, clock: tickingClock() });
    const streams = Array.from({ length: 16 }, () => randomStream());
    // Like requests whose I/O callbacks run in one turn: each callback appends on its own.
    const appends = streams.map(
      (stream) =>
        new Promise((resolve, reject) =>
          setImmediate(() => store.append(stream, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' }).then(resolve, reject)),
        ),
    );
    await Promise.all(appends);
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare('SELECT count(*) FROM events').pluck().get()).toBe(16);
    expect(raw.prepare('SELECT count(DISTINCT recorded_at) FROM events').pluck().get()).toBe(1);
    raw.close();
    await store.close();
  });

  it('commits a lone append at once, in its own transaction', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path, clock: tickingClock() });
    const raw = new Database(path, { readonly: true });
    const stream = randomStream();
    for (let revision = 1; revision <= 3; revision++) {
      await store.append(stream, [{ type: 'Noted', data: revision }], { expectedRevision: revision - 1 });
      expect(raw.prepare('SELECT count(*) FROM events WHERE stream = ?').pluck().get(stream)).toBe(revision);
    }
    expect(raw.prepare('SELECT count(DISTINCT recorded_at) FROM events').pluck().get()).toBe(3);
    raw.close();
    await store.close();
  });

  it('commits a lone append within the next turns of the event loop, with no timer', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    const raw = new Database(path, { readonly: true });
    const stream = randomStream();
    const pending = store.append(stream, [{ type: 'Noted', data: 1 }], { expectedRevision: 'no_stream' });
    await new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
    // Committed before any timer could have fired; the caller is answered after the commit.
    expect(raw.prepare('SELECT count(*) FROM events WHERE stream = ?').pluck().get(stream)).toBe(1);
    await expect(pending).resolves.toMatchObject({ revision: 1 });
    raw.close();
    await store.close();
  });

  it('fails every append of a flush with a clear StorageError when another connection holds the lock past the timeout', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path, busyTimeoutMs: 100 });
    const raw = new Database(path);
    raw.exec('BEGIN IMMEDIATE');
    const streams = [randomStream(), randomStream(), randomStream()];
    const settled = await Promise.allSettled(
      streams.map((stream) => store.append(stream, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' })),
    );
    raw.exec('ROLLBACK');
    for (const result of settled) {
      expect(result.status).toBe('rejected');
      const error = (result as PromiseRejectedResult).reason as StorageError;
      expect(error).toBeInstanceOf(StorageError);
      expect(error.message).toContain('locked');
      expect((error.cause as { code?: string }).code).toMatch(/^SQLITE_BUSY/);
    }
    for (const stream of streams) expect((await store.read(stream)).revision).toBe(0);
    expect(await store.append(streams[0] as string, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' })).toEqual({ revision: 1, position: 1 });
    raw.close();
    await store.close();
  });
});

describe('GroupCommit', () => {
  /** A transaction log standing in for SQLite where a real one cannot fail on demand (a failing COMMIT). */
  function fakeTransactions(failOn?: keyof TransactionControl): { tx: TransactionControl; log: string[] } {
    const log: string[] = [];
    let open = false;
    const step = (name: keyof TransactionControl, effect?: () => void) => () => {
      log.push(name);
      if (name === failOn) throw Object.assign(new Error(`${name} failed`), { code: 'SQLITE_IOERR' });
      effect?.();
    };
    const tx: TransactionControl = {
      beginImmediate: step('beginImmediate', () => (open = true)),
      commit: step('commit', () => (open = false)),
      rollback: step('rollback', () => (open = false)),
      savepoint: step('savepoint'),
      release: step('release'),
      rollbackToSavepoint: step('rollbackToSavepoint'),
      inTransaction: () => open,
    };
    return { tx, log };
  }
  const translate = (error: unknown) => new StorageError('write failed', { cause: error });

  it('fails every job of a flush whose COMMIT fails, and rolls the transaction back', async () => {
    const { tx, log } = fakeTransactions('commit');
    const commits = new GroupCommit(tx, translate);
    const settled = await Promise.allSettled([commits.submit(() => 1), commits.submit(() => 2)]);
    expect(settled.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect((settled[0] as PromiseRejectedResult).reason).toBeInstanceOf(StorageError);
    expect(log).toEqual(['beginImmediate', 'commit', 'rollback']);
  });

  it('rolls a job that may fail after writing back to its own savepoint and commits the others', async () => {
    const { tx, log } = fakeTransactions();
    const commits = new GroupCommit(tx, translate);
    const settled = await Promise.allSettled([
      commits.submit(() => 'first'),
      commits.submit(
        () => {
          throw new InvalidInputError('events', 'refused');
        },
        { mayFailAfterWriting: true },
      ),
      commits.submit(() => 'third', { mayFailAfterWriting: true }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(log).toEqual(['beginImmediate', 'savepoint', 'rollbackToSavepoint', 'release', 'savepoint', 'release', 'commit']);
  });

  it('rolls back instead of committing when every job of a flush failed', async () => {
    const { tx, log } = fakeTransactions();
    const commits = new GroupCommit(tx, translate);
    const settled = await Promise.allSettled([
      commits.submit(() => {
        throw new InvalidInputError('events', 'refused');
      }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(['rejected']);
    expect(log).toEqual(['beginImmediate', 'rollback']);
  });

  it('fails the whole flush when a job meets a storage failure, since SQLite may have undone the transaction', async () => {
    const { tx } = fakeTransactions();
    const commits = new GroupCommit(tx, translate);
    const settled = await Promise.allSettled([
      commits.submit(() => 'first'),
      commits.submit(() => {
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      }),
    ]);
    expect(settled.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect((settled[0] as PromiseRejectedResult).reason).toBeInstanceOf(StorageError);
  });
});
