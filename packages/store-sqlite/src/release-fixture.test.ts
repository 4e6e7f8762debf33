import { copyFileSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openSessionHistory } from '@sessionfold/core';
import type { EventStore, RecordedEvent } from '@sessionfold/core/kernel';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { SCHEMA_VERSION } from './schema.js';
import { asReleased, collect, freshPath } from './test-support.fixture.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

interface Expected {
  list: unknown[];
  sessions: Record<string, unknown>;
  streams: Array<{ stream: string; revision: number }>;
  feed: Array<Partial<RecordedEvent>>;
}

const expected = JSON.parse(readFileSync(fixture('release-0.1.0.expected.json'), 'utf8')) as Expected;

/** A copy of the 0.1.0 database in a fresh directory: the checked-in file is never opened for writing. */
function copyOfRelease(): string {
  const path = freshPath();
  copyFileSync(fixture('release-0.1.0.db'), path);
  return path;
}

/** The feed with only the fields the expected file records (it has no positions or times). */
async function feedAsRecorded(store: EventStore): Promise<unknown[]> {
  return (await collect(store.readAll())).map((record, index) => {
    const fields = Object.keys(expected.feed[index] ?? { streamId: 0, type: 0, revision: 0, data: 0 }) as Array<keyof RecordedEvent>;
    return Object.fromEntries(fields.map((field) => [field, record[field]]));
  });
}

describe('a database written by release 0.1.0', () => {
  it('opens migrated to the current schema version, and reads back what 0.1.0 read: streams, the feed, and the service list and get', async () => {
    const path = copyOfRelease();
    const store = await sqliteStore({ path });
    try {
      expect(await collect(store.streams())).toEqual(expected.streams);
      expect(await feedAsRecorded(store)).toEqual(expected.feed);
      const history = await openSessionHistory({ store, clock: () => new Date('2026-11-30T12:00:00.000Z') });
      expect(asReleased(await history.list(), expected.list)).toEqual(expected.list);
      for (const [id, session] of Object.entries(expected.sessions)) expect(asReleased(await history.get(id), session)).toEqual(session);
      await history.close();
    } finally {
      await store.close();
    }
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    raw.close();
  });

  it('refuses the same file once a newer version has marked it with a later schema version, and changes nothing', async () => {
    const path = copyOfRelease();
    const raw = new Database(path);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    const before = readFileSync(path);
    await expect(sqliteStore({ path })).rejects.toMatchObject({
      code: 'storage_error',
      message: expect.stringContaining(`schema version ${SCHEMA_VERSION + 1}`),
    });
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('is migrated in one transaction by its first opener: events gain schema_version, 1 on every row 0.1.0 wrote', async () => {
    const path = copyOfRelease();
    const before = new Database(path, { readonly: true });
    expect(before.pragma('user_version', { simple: true })).toBe(1);
    const columns = (db: Database.Database) => (db.pragma('table_info(events)') as Array<{ name: string }>).map((column) => column.name);
    expect(columns(before)).not.toContain('schema_version');
    before.close();
    const store = await sqliteStore({ path });
    const feed = await collect(store.readAll());
    expect(feed.map((record) => record.schemaVersion)).toEqual(expected.feed.map(() => 1));
    await store.append('ledger-1', [{ type: 'Deposited', data: { amount: 1 }, schemaVersion: 2 }], { expectedRevision: 2 });
    await store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma('user_version', { simple: true })).toBe(2);
    expect(columns(raw)).toContain('schema_version');
    expect(raw.prepare("SELECT revision, schema_version FROM events WHERE stream = 'ledger-1' AND kind = 0 ORDER BY revision").raw().all()).toEqual([
      [1, 1],
      [2, 1],
      [3, 2],
    ]);
    raw.close();
  });

  it('takes appends afterwards, which survive a reopen', async () => {
    const path = copyOfRelease();
    const store = await sqliteStore({ path });
    const ledger = expected.streams.find((entry) => entry.stream === 'ledger-1');
    expect(ledger?.revision).toBe(2);
    const lastPosition = Math.max(...(await collect(store.readAll())).map((record) => record.position));
    const result = await store.append('ledger-1', [{ type: 'Deposited', data: { amount: 7 }, eventId: 'd-2' }], { expectedRevision: 2 });
    expect(result).toEqual({ revision: 3, position: lastPosition + 1 });
    // An id 0.1.0 stored is still recognised: the retry is a no-op answered with its batch's result (revisions 1..2).
    expect(await store.append('ledger-1', [{ type: 'Deposited', data: { amount: 5 }, eventId: 'd-1' }], { expectedRevision: 'any' })).toMatchObject({
      revision: 2,
    });
    await store.close();

    const reopened = await sqliteStore({ path });
    const events = await collect((await reopened.read('ledger-1')).events);
    expect(events.map((event) => [event.revision, event.type, event.data, event.eventId])).toEqual([
      [1, 'Deposited', { amount: 5 }, 'd-1'],
      [2, 'Withdrawn', { amount: 2, note: 'x\u0000y' }, undefined],
      [3, 'Deposited', { amount: 7 }, 'd-2'],
    ]);
    expect(await collect(reopened.streams())).toEqual(expected.streams.map((entry) => (entry.stream === 'ledger-1' ? { ...entry, revision: 3 } : entry)));
    await reopened.close();
  });
});
