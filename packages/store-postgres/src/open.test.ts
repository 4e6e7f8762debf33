import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidInputError, StorageError } from '@sessionfold/core/kernel';
import { postgresStore } from './index.js';
import { SCHEMA_VERSION } from './schema.js';
import { PG_URL, adminPool, dropSchema, endAdmin, freshSchema, openStore } from './test-support.fixture.js';

describe('postgresStore options', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['neither connectionString nor pool', {}, 'options'],
    ['both connectionString and pool', { connectionString: 'postgres://x', pool: new pg.Pool() }, 'options'],
    ['an empty connectionString', { connectionString: '' }, 'connectionString'],
    ['a pool that is not one', { pool: {} }, 'pool'],
    ['a schema with a quote', { connectionString: 'postgres://x', schema: 'a"b' }, 'schema'],
    ['an upper-case schema', { connectionString: 'postgres://x', schema: 'Events' }, 'schema'],
    ['maxEventBytes 0', { connectionString: 'postgres://x', maxEventBytes: 0 }, 'maxEventBytes'],
    ['a clock that is not a function', { connectionString: 'postgres://x', clock: 'now' }, 'clock'],
    ['an observer whose hook is not a function', { connectionString: 'postgres://x', observer: { flushed: 1 } }, 'observer'],
    ['an observer that is not an object', { connectionString: 'postgres://x', observer: 'log' }, 'observer'],
  ])('%s is InvalidInputError naming the option, before any connection', async (_label, options, field) => {
    const error = await postgresStore(options as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).field).toBe(field);
  });
});

describe('postgresStore: opening a schema', { tags: ['postgres'] }, () => {
  const schemas: string[] = [];
  const fresh = (label: string) => {
    const schema = freshSchema(label);
    schemas.push(schema);
    return schema;
  };
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(schema);
    await endAdmin();
  });

  it('8 stores opening one empty schema at once all succeed, and all work', async () => {
    for (const precreated of [false, true]) {
      const schema = fresh('migrate');
      if (precreated) await adminPool().query(`CREATE SCHEMA "${schema}"`);
      const stores = await Promise.all(Array.from({ length: 8 }, async () => (await openStore({ schema })).store));
      try {
        const results = await Promise.all(stores.map((store, i) => store.append(`s-${i}`, [{ type: 'Opened', data: i }], { expectedRevision: 'no_stream' })));
        expect(results.map((r) => r.position).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
        const { rows } = await adminPool().query(`SELECT version FROM "${schema}".schema_version`);
        expect(rows).toEqual([{ version: SCHEMA_VERSION }]);
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    }
  });

  it('a schema written by a newer release is refused with StorageError naming both versions, and left unchanged', async () => {
    const { store, schema } = await openStore({ schema: fresh('newer') });
    await store.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.close();
    await adminPool().query(`UPDATE "${schema}".schema_version SET version = $1`, [SCHEMA_VERSION + 1]);
    for (const readOnly of [false, true]) {
      const error = await openStore({ schema, readOnly }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).message).toContain(`has version ${SCHEMA_VERSION + 1}`);
      expect((error as StorageError).message).toContain(`up to ${SCHEMA_VERSION}`);
    }
    const { rows } = await adminPool().query(`SELECT count(*)::int AS n FROM "${schema}".events`);
    expect(rows).toEqual([{ n: 1 }]);
  });

  it("another application's schema (tables, no version) is refused and left unchanged", async () => {
    const schema = fresh('foreign');
    await adminPool().query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".orders (id int)`);
    const error = await openStore({ schema }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageError);
    expect((error as StorageError).message).toContain('belongs to something else');
    const { rows } = await adminPool().query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1`, [schema]);
    expect(rows).toEqual([{ n: 1 }]);
  });

  it('readOnly: a missing schema is a clear StorageError and is not created; an existing one reads but refuses writes', async () => {
    const schema = fresh('ro');
    const missing = await openStore({ schema, readOnly: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(missing).toBeInstanceOf(StorageError);
    expect((missing as StorageError).message).toContain('does not exist');
    const { rows } = await adminPool().query('SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(rows).toEqual([{ n: 0 }]);

    const writer = (await openStore({ schema })).store;
    await writer.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await writer.close();
    const reader = (await openStore({ schema, readOnly: true })).store;
    try {
      expect((await reader.read('s')).revision).toBe(1);
      for (const write of [
        () => reader.append('s', [{ type: 'B', data: 2 }], { expectedRevision: 'any' }),
        () => reader.deleteStream('s', { expectedRevision: 'any' }),
        () => reader.putBlob('s', new Uint8Array([1])),
      ]) {
        const error = await write().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(StorageError);
        expect((error as StorageError).message).toContain('read-only');
      }
    } finally {
      await reader.close();
    }
  });

  it("a pool the application passes is never ended by close; a store's own pool is", async () => {
    const schema = fresh('pool');
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    try {
      const store = await postgresStore({ pool, schema });
      await store.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      await store.close();
      expect(pool.ended).toBe(false);
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect(pool.listenerCount('error')).toBe(0);
    } finally {
      await pool.end();
    }

    const name = `sf_owner_${schema.slice(-8)}`;
    const url = new URL(PG_URL as string);
    url.searchParams.set('application_name', name);
    const owned = await postgresStore({ connectionString: url.toString(), schema });
    await owned.read('s');
    const count = async () =>
      (await adminPool().query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [name])).rows[0]?.n;
    expect(await count()).toBeGreaterThan(0);
    await owned.close();
    for (let attempt = 0; attempt < 50 && (await count()) !== 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await count()).toBe(0);
  });
});
