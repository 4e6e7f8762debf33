import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

describe('sqliteStore: status', () => {
  it('reports the file, its pages, the WAL, the schema version and the stream count', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    try {
      await store.append('a', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      await store.append('b', [{ type: 'B', data: 2 }], { expectedRevision: 'no_stream' });
      const status = await store.status();
      expect(status).toMatchObject({
        kind: 'sqlite',
        lastPosition: 2,
        holdingBack: [],
        details: { path, readOnly: false, schemaVersion: 2, journalMode: 'wal', streams: 2, writeLocked: false },
      });
      const details = status.details as Record<string, number>;
      expect(details['pageSize']).toBeGreaterThan(0);
      expect(details['fileBytes']).toBe((details['pageSize'] as number) * (details['pageCount'] as number));
      expect(details['walBytes']).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it('tells that another connection holds the write lock, without waiting for it, and goes on writing once it is released', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    const other = new Database(path);
    try {
      other.exec('BEGIN IMMEDIATE');
      expect((await store.status()).details).toMatchObject({ writeLocked: true });
      other.exec('ROLLBACK');
      expect((await store.status()).details).toMatchObject({ writeLocked: false });
      expect(await store.append('a', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' })).toEqual({ revision: 1, position: 1 });
    } finally {
      other.close();
      await store.close();
    }
  });

  it('a read-only store reports without probing the lock', async () => {
    const path = freshPath();
    await (await sqliteStore({ path })).close();
    const store = await sqliteStore({ path, readOnly: true });
    try {
      expect(await store.status()).toMatchObject({ kind: 'sqlite', lastPosition: 0, details: { readOnly: true, writeLocked: null } });
    } finally {
      await store.close();
    }
  });
});
