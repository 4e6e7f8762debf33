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

  it('reports compaction: the streams with a snapshot, the revisions they cover, and the free pages the dropped events left', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    try {
      const events = Array.from({ length: 200 }, (_, n) => ({ type: 'A', data: { n, pad: 'x'.repeat(2000) } }));
      await store.append('a', events, { expectedRevision: 'no_stream' });
      await store.append('b', [{ type: 'B', data: 1 }], { expectedRevision: 'no_stream' });
      expect((await store.status()).details).toMatchObject({ compactedStreams: 0, compactedEvents: 0, freeBytes: 0 });
      await store.compact('a', { revision: 150, state: { upTo: 150 }, identity: { stream: 'a', schemaVersion: 1 } });
      const details = (await store.status()).details as Record<string, number>;
      expect(details).toMatchObject({ compactedStreams: 1, compactedEvents: 150 });
      // 150 rows of 2 KB went: their pages are free for later writes (VACUUM gives them back to the file system).
      expect(details['freeBytes']).toBeGreaterThan(150 * 1000);
      expect(details['freeBytes']).toBeLessThan(details['fileBytes'] as number);
      await store.deleteStream('a', { expectedRevision: 200 });
      expect((await store.status()).details).toMatchObject({ compactedStreams: 0, compactedEvents: 0 });
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
