import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CorruptionError, InvalidInputError, StorageError, StoreClosedError } from '@sessionfold/core/kernel';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { APPLICATION_ID, SCHEMA_VERSION } from './schema.js';
import { collect, finished, freshPath, randomStream, startWorker } from './test-support.fixture.js';

const posix = process.platform !== 'win32';
if (!posix) console.info('store-sqlite: the test of owner-only files under a umask is skipped: it needs POSIX');

/** A closed database file with a few hundred events in it. */
async function populated(): Promise<{ path: string; streams: string[] }> {
  const path = freshPath();
  const store = await sqliteStore({ path });
  const streams = Array.from({ length: 200 }, () => randomStream());
  for (const stream of streams) await store.append(stream, [{ type: 'Noted', data: { pad: 'x'.repeat(200) } }], { expectedRevision: 'no_stream' });
  await store.close();
  return { path, streams };
}

/** What `work` rejects with; fails the test when it resolves. */
async function caught(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to reject');
}

describe('opening a database file', () => {
  it('creates a new file private to its owner, in WAL mode, at the current schema version', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    await store.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(raw.pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
    raw.close();
  });

  it.skipIf(!posix)(
    'creates the database, its -wal and its -shm owner-only under umask 022, while the first process still has them open',
    async () => {
      const path = freshPath();
      const [line] = await finished(startWorker('umask-open', [path]));
      expect(JSON.parse(line ?? '{}')).toEqual({ db: '600', '-wal': '600', '-shm': '600' });
      const store = await sqliteStore({ path });
      expect((await store.read('umask-stream')).revision).toBe(1);
      await store.close();
    },
    60_000,
  );

  it('keeps everything across close and reopen', async () => {
    const path = freshPath();
    const stream = randomStream();
    const first = await sqliteStore({ path });
    await first.append(stream, [{ type: 'Opened', data: { n: 1 }, eventId: 'one' }], { expectedRevision: 'no_stream' });
    await first.close();
    const second = await sqliteStore({ path });
    const read = await second.read(stream);
    expect(read.revision).toBe(1);
    expect((await collect(read.events)).map((event) => event.data)).toEqual([{ n: 1 }]);
    expect(await second.append(stream, [{ type: 'Opened', data: { n: 1 }, eventId: 'one' }], { expectedRevision: 'any' })).toEqual({
      revision: 1,
      position: 1,
    });
    await second.close();
  });

  it('refuses a file that is not SQLite with a CorruptionError naming it, and writes nothing', async () => {
    const path = freshPath();
    const garbage = Buffer.alloc(8192, 0x5a);
    writeFileSync(path, garbage);
    const error = await caught(() => sqliteStore({ path }));
    expect(error).toBeInstanceOf(CorruptionError);
    expect((error as CorruptionError).file).toBe(path);
    expect((error as CorruptionError).message).toContain(path);
    expect(((error as CorruptionError).cause as { code?: string }).code).toBe('SQLITE_NOTADB');
    expect(readFileSync(path).equals(garbage)).toBe(true);
    expect(readdirSync(dirname(path))).toEqual(['store.db']);
  });

  it('refuses a database whose schema page is damaged with a CorruptionError naming it, and writes nothing', async () => {
    const { path } = await populated();
    const damaged = readFileSync(path);
    damaged.fill(0xab, 200, 3000);
    writeFileSync(path, damaged);
    const error = await caught(() => sqliteStore({ path }));
    expect(error).toBeInstanceOf(CorruptionError);
    expect((error as CorruptionError).file).toBe(path);
    expect(((error as CorruptionError).cause as { code?: string }).code).toMatch(/^SQLITE_CORRUPT/);
    expect(readFileSync(path).equals(damaged)).toBe(true);
  });

  it('reports a damaged data page met while reading as a CorruptionError naming the file', async () => {
    const { path, streams } = await populated();
    const damaged = readFileSync(path);
    damaged.fill(0xab, 4096 * 2, 4096 * 3);
    writeFileSync(path, damaged);
    const store = await sqliteStore({ path });
    const failures: unknown[] = [];
    const attempt = async (work: () => Promise<unknown>) => work().catch((error: unknown) => failures.push(error));
    await attempt(() => collect(store.readAll()));
    await attempt(() => collect(store.streams()));
    for (const stream of streams) await attempt(async () => collect((await store.read(stream)).events));
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) expect(failure).toSatisfy((error) => error instanceof CorruptionError && error.file === path);
    await store.close();
    expect(readFileSync(path).equals(damaged)).toBe(true);
  });

  it('refuses a database written by a newer version with a clear error, and changes nothing', async () => {
    const { path } = await populated();
    const raw = new Database(path);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    const before = readFileSync(path);
    const error = await caught(() => sqliteStore({ path }));
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toContain(`schema version ${SCHEMA_VERSION + 1}`);
    expect((error as Error).message).toContain('newer');
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it("refuses another application's SQLite database instead of adding tables to it", async () => {
    const path = freshPath();
    const raw = new Database(path);
    raw.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY)');
    raw.close();
    const before = readFileSync(path);
    expect(await caught(() => sqliteStore({ path }))).toBeInstanceOf(InvalidInputError);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('rejects missing or malformed options before touching the disk', async () => {
    expect(await caught(() => sqliteStore({} as never))).toMatchObject({ code: 'invalid_input', field: 'path' });
    const path = freshPath();
    expect(await caught(() => sqliteStore({ path, synchronous: 'OFF' as never }))).toMatchObject({ field: 'synchronous' });
    expect(await caught(() => sqliteStore({ path, busyTimeoutMs: -1 }))).toMatchObject({ field: 'busyTimeoutMs' });
    expect(existsSync(path)).toBe(false);
  });

  it('reports a failure to open as a rejection, never as a synchronous throw', async () => {
    let opening: Promise<unknown> | undefined;
    expect(() => {
      opening = sqliteStore({} as never);
    }).not.toThrow();
    await expect(opening).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('reports a directory that cannot hold the file as a StorageError', async () => {
    const path = `${freshPath()}.d/missing/store.db`;
    const error = await caught(() => sqliteStore({ path }));
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toContain(path);
  });

  it('commits writes already accepted when closed, then refuses calls with StoreClosedError', async () => {
    const path = freshPath();
    const stream = randomStream();
    const store = await sqliteStore({ path });
    const pending = store.append(stream, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' });
    await store.close();
    await expect(pending).resolves.toEqual({ revision: 1, position: 1 });
    await expect(store.read(stream)).rejects.toBeInstanceOf(StoreClosedError);
    await expect(store.append(stream, [{ type: 'Noted', data: null }], { expectedRevision: 1 })).rejects.toBeInstanceOf(StoreClosedError);
    const reopened = await sqliteStore({ path });
    expect((await reopened.read(stream)).revision).toBe(1);
    await reopened.close();
  });
});
