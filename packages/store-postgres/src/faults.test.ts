import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, StorageError, type RecordedEvent } from '@sessionfold/core/kernel';
import { PG_URL, adminPool, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

describe('postgresStore: a connection lost during an append', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('pg_terminate_backend mid-append: the append rejects with StorageError, nothing of it is visible, the next append works', async () => {
    const { store, schema } = await openStore({ schema: fresh('kill') });
    try {
      await store.append('steady', [{ type: 'Before', data: 1 }], { expectedRevision: 'no_stream' });
      // Another writer holds the feed counter, so the append is caught inside its statement, mid-transaction.
      const holder = new pg.Client({ connectionString: PG_URL });
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query(`SELECT position FROM "${schema}".feed_head FOR UPDATE`);
      const append = store.append(
        'victim',
        [
          { type: 'A', data: 1 },
          { type: 'B', data: 2 },
        ],
        { expectedRevision: 'no_stream' },
      );
      const outcome = append.then(
        () => 'resolved',
        (error: unknown) => error,
      );
      let pid: number | undefined;
      for (let attempt = 0; attempt < 100 && pid === undefined; attempt++) {
        const { rows } = await adminPool().query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`, [
          `%"${schema}".append_batches%`,
        ]);
        pid = rows[0]?.pid;
        if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(pid, 'the append is waiting inside its statement').toBeDefined();
      await adminPool().query('SELECT pg_terminate_backend($1)', [pid]);
      const error = await outcome;
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).code).toBe('storage_error');
      expect((error as StorageError).cause).toBeDefined();
      await holder.query('ROLLBACK');
      await holder.end();

      expect((await store.read('victim')).revision).toBe(0);
      const next = await store.append('steady', [{ type: 'After', data: 2 }], { expectedRevision: 1 });
      expect(next).toEqual({ revision: 2, position: 2 });
      const feed: RecordedEvent[] = [];
      for await (const record of store.readAll()) feed.push(record);
      expect(feed.map((r) => `${r.streamId}:${r.type}`)).toEqual(['steady:Before', 'steady:After']);
    } finally {
      await store.close();
    }
  });

  it('status() names a transaction left open that holds back the writers: its pid, age, state and how many wait', async () => {
    const { store, schema } = await openStore({ schema: fresh('stall') });
    try {
      await store.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      const holder = new pg.Client({ connectionString: PG_URL });
      await holder.connect();
      const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await holder.query('BEGIN');
      await holder.query(`SELECT position FROM "${schema}".feed_head FOR UPDATE`);
      const stalled = store.append('s', [{ type: 'B', data: 2 }], { expectedRevision: 1 });
      try {
        let status = await store.status?.();
        for (let attempt = 0; attempt < 100 && status?.holdingBack[0]?.waiting !== 1; attempt++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          status = await store.status?.();
        }
        expect(status?.lastPosition).toBe(1);
        expect(status?.holdingBack).toHaveLength(1);
        expect(status?.holdingBack[0]).toMatchObject({ pid: rows[0]?.pid, state: 'idle in transaction', waiting: 1 });
        expect(status?.holdingBack[0]?.ageMs).toBeGreaterThanOrEqual(0);
      } finally {
        // Released even when a check fails, so closing the store does not wait forever for the stalled append.
        await holder.query('ROLLBACK');
        await holder.end();
      }
      expect(await stalled).toEqual({ revision: 2, position: 2 });
      expect(await store.status?.()).toMatchObject({ kind: 'postgres', lastPosition: 2, holdingBack: [] });
    } finally {
      await store.close();
    }
  });

  it.each(['with\u0000nul', 'lone \ud800 surrogate'])(
    'a type PostgreSQL text cannot hold (%j) is InvalidInputError and fails alone, not the appends sharing its commit',
    async (type) => {
      const { store } = await openStore({ schema: fresh('text') });
      try {
        const [good, bad, id] = await Promise.allSettled([
          store.append('good', [{ type: 'Fine', data: '\u0000 in data is fine' }], { expectedRevision: 'no_stream' }),
          store.append('bad', [{ type, data: 1 }], { expectedRevision: 'no_stream' }),
          store.append('bad', [{ type: 'Fine', data: 1, eventId: type }], { expectedRevision: 'no_stream' }),
        ]);
        expect(good).toMatchObject({ status: 'fulfilled', value: { revision: 1 } });
        for (const refused of [bad, id]) {
          expect(refused.status).toBe('rejected');
          expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(InvalidInputError);
        }
        expect((await store.read('bad')).revision).toBe(0);
      } finally {
        await store.close();
      }
    },
  );

  it('an unreachable server is a StorageError on open, with the driver error as cause', async () => {
    const error = await openStore({ connectionString: 'postgres://postgres@127.0.0.1:1/test', schema: 'sf_unreachable' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageError);
    expect((error as StorageError).message).toMatch(/^@sessionfold\/store-postgres: /);
    expect((error as StorageError).cause).toBeInstanceOf(Error);
  });
});
