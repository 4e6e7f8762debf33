import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { FeedRecord } from '@sessionfold/core/kernel';
import { postgresStore } from './index.js';
import { feedChannel } from './schema.js';
import { PG_URL, adminPool, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

/** Follows `store` in the background; `until(n)` waits (up to 10 s) for n records. */
function follow(store: { follow(options: { signal: AbortSignal }): AsyncIterable<FeedRecord> }) {
  const controller = new AbortController();
  const records: FeedRecord[] = [];
  const done = (async () => {
    for await (const record of store.follow({ signal: controller.signal })) records.push(record);
  })();
  const until = async (count: number) => {
    for (let waited = 0; records.length < count; waited += 20) {
      if (waited > 10_000) throw new Error(`follow yielded ${records.length} records, expected ${count}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return records.map((r) => `${r.position}:${r.type}`);
  };
  const stop = async () => {
    controller.abort();
    await done;
  };
  return { records, until, stop };
}

describe('postgresStore: follow', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('goes on seeing another connection’s commits after its listening connection is terminated', async () => {
    const { store: writer, schema } = await openStore({ schema: fresh('listen') });
    const reader = await postgresStore({ connectionString: PG_URL as string, schema });
    const follower = follow(reader);
    try {
      await writer.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'any' });
      await follower.until(1);
      const listening = async () =>
        (await adminPool().query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [`LISTEN ${feedChannel(schema)}`])).rows.map(
          (r) => r.pid,
        );
      const before = await listening();
      expect(before).toHaveLength(1);
      await adminPool().query('SELECT pg_terminate_backend($1)', [before[0]]);
      await writer.append('s', [{ type: 'B', data: 2 }], { expectedRevision: 'any' });
      await writer.append('s', [{ type: 'C', data: 3 }], { expectedRevision: 'any' });
      expect(await follower.until(3)).toEqual(['1:A', '2:B', '3:C']);
      // The listening connection is replaced.
      let after = await listening();
      for (let attempt = 0; attempt < 100 && (after.length !== 1 || after[0] === before[0]); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        after = await listening();
      }
      expect(after).toHaveLength(1);
      expect(after[0]).not.toBe(before[0]);
    } finally {
      await follower.stop();
      await reader.close();
      await writer.close();
    }
  });

  it('yields a position that commits late before the ones after it, each once', async () => {
    const { store, schema } = await openStore({ schema: fresh('late') });
    const follower = follow(store);
    const client = await adminPool().connect();
    try {
      // Another session draws position 1 and holds it uncommitted; the store's own append has to wait for it.
      await client.query('BEGIN');
      await client.query(`SELECT * FROM "${schema}".append_batches('{late}', '{-1}', '{1}', '{Late}', '{"1"}', '{NULL}', '{1}', '2026-01-01T00:00:00.000Z')`);
      const after = store.append('s', [{ type: 'After', data: 2 }], { expectedRevision: 'any' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(follower.records).toEqual([]);
      await client.query('COMMIT');
      expect((await after).position).toBe(2);
      expect(await follower.until(2)).toEqual(['1:Late', '2:After']);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(follower.records).toHaveLength(2);
    } finally {
      client.release();
      await follower.stop();
      await store.close();
    }
  });

  it("on an application's pool, listens on a connection of that pool and gives none back listening", async () => {
    const schema = fresh('pool');
    const pool = new pg.Pool({ connectionString: PG_URL, max: 3 });
    const listening = async () => (await adminPool().query('SELECT pid FROM pg_stat_activity WHERE query = $1', [`LISTEN ${feedChannel(schema)}`])).rows;
    try {
      const reader = await postgresStore({ pool, schema });
      const { store: writer } = await openStore({ schema });
      const follower = follow(reader);
      await writer.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'any' });
      expect(await follower.until(1)).toEqual(['1:A']);
      expect(await listening()).toHaveLength(1);
      await follower.stop();
      await reader.close();
      await writer.close();
      // The listening connection was ended, not returned to the pool: nothing listens any more.
      let left = await listening();
      for (let attempt = 0; attempt < 100 && left.length > 0; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        left = await listening();
      }
      expect(left).toEqual([]);
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });
});
