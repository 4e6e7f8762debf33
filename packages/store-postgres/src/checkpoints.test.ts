import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { CorruptionError, StorageError } from '@sessionfold/core/kernel';
import { postgresStore, type PostgresEventStore } from './index.js';
import { PAGE_SIZE, queriesFor } from './queries.js';
import { SCHEMA_VERSION } from './schema.js';
import { PG_URL, adminPool, collect, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

describe('postgresStore: checkpoints and the store identity', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('a read-only store loads checkpoints and follows, and refuses to save like every write', async () => {
    const { store, schema } = await openStore({ schema: fresh('ro') });
    const reader = await postgresStore({ connectionString: PG_URL as string, schema, readOnly: true });
    try {
      await store.checkpoints.save('projection', 'state');
      expect(await reader.checkpoints.load('projection')).toBe('state');
      expect(await reader.checkpoints.storeId()).toBe(await store.checkpoints.storeId());
      await expect(reader.checkpoints.save('projection', 'other')).rejects.toBeInstanceOf(StorageError);
      expect(await store.checkpoints.load('projection')).toBe('state');
      await store.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'any' });
      const controller = new AbortController();
      const seen: string[] = [];
      for await (const record of reader.follow({ signal: controller.signal })) {
        seen.push(record.type);
        controller.abort();
      }
      expect(seen).toEqual(['A']);
    } finally {
      await reader.close();
      await store.close();
    }
  });

  it("a checkpoint row copied in from another schema is not this store's: load answers undefined", async () => {
    const { store: first, schema: from } = await openStore({ schema: fresh('from') });
    const { store: second, schema: to } = await openStore({ schema: fresh('to') });
    try {
      await first.checkpoints.save('projection', new Uint8Array([1, 2]));
      await adminPool().query(`INSERT INTO "${to}".checkpoints SELECT * FROM "${from}".checkpoints`);
      expect(await second.checkpoints.load('projection')).toBeUndefined();
      await second.checkpoints.save('projection', new Uint8Array([3]));
      expect([...((await second.checkpoints.load('projection')) as Uint8Array)]).toEqual([3]);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('a version 1 schema gets a store identity and the checkpoints table from the migration; its events stay', async () => {
    const schema = fresh('v1');
    const { store } = await openStore({ schema });
    await store.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'any' });
    await store.close();
    // What a version 1 schema lacks.
    await adminPool().query(`DROP TABLE "${schema}".store_identity, "${schema}".checkpoints; DROP TRIGGER feed_changed ON "${schema}".events;
                             DROP FUNCTION "${schema}".notify_feed(); UPDATE "${schema}".schema_version SET version = 1`);
    const opened = await Promise.all([openStore({ schema }), openStore({ schema })]);
    try {
      const [a, b] = opened.map((o) => o.store) as [PostgresEventStore, PostgresEventStore];
      const id = await a.checkpoints.storeId();
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await b.checkpoints.storeId()).toBe(id);
      await a.checkpoints.save('projection', 'kept');
      expect(await b.checkpoints.load('projection')).toBe('kept');
      expect((await collect(a.readAll())).map((r) => r.type)).toEqual(['A']);
      const { rows } = await adminPool().query(`SELECT version FROM "${schema}".schema_version`);
      expect(rows).toEqual([{ version: SCHEMA_VERSION }]);
    } finally {
      for (const { store: s } of opened) await s.close();
    }
  });

  it('a checkpoint of many kilobytes is kept deflated, and loads back byte for byte, as text or as bytes', async () => {
    const { store, schema } = await openStore({ schema: fresh('deflated') });
    try {
      const text = JSON.stringify(Array.from({ length: 4_000 }, (_, i) => ({ i, name: `séance ${i} ✓`, at: '2026-12-01T09:00:00.000Z' })));
      await store.checkpoints.save('text', text);
      expect(await store.checkpoints.load('text')).toBe(text);
      const noise = new Uint8Array(randomBytes(100_000));
      await store.checkpoints.save('bytes', noise);
      expect(Buffer.from((await store.checkpoints.load('bytes')) as Uint8Array).equals(Buffer.from(noise))).toBe(true);
      await store.checkpoints.save('small', 'tiny');
      const { rows } = await adminPool().query(
        `SELECT name, inflated_size::int AS size, octet_length(data) AS stored FROM "${schema}".checkpoints ORDER BY name`,
      );
      const kept = new Map(rows.map((row: { name: string; size: number | null; stored: number }) => [row.name, row]));
      expect(kept.get('text')).toMatchObject({ size: Buffer.byteLength(text) });
      expect(kept.get('text')?.stored).toBeLessThan(Buffer.byteLength(text) / 4);
      expect(kept.get('small')).toMatchObject({ size: null, stored: 4 });
    } finally {
      await store.close();
    }
  });

  it('a deflated checkpoint that does not inflate is damage, named as such', async () => {
    const { store, schema } = await openStore({ schema: fresh('broken') });
    try {
      await store.checkpoints.save('projection', 'x'.repeat(50_000));
      await adminPool().query(`UPDATE "${schema}".checkpoints SET inflated_size = inflated_size + 1`);
      const wrongSize = await store.checkpoints.load('projection').catch((thrown: unknown) => thrown);
      expect(wrongSize).toBeInstanceOf(CorruptionError);
      expect((wrongSize as CorruptionError).message).toContain('checkpoint projection inflates to 50000 bytes, not 50001');
      await adminPool().query(`UPDATE "${schema}".checkpoints SET inflated_size = 50000, data = overlay(data placing '\\xffffffff'::bytea from 3)`);
      const garbled = await store.checkpoints.load('projection').catch((thrown: unknown) => thrown);
      expect(garbled).toBeInstanceOf(CorruptionError);
      expect((garbled as CorruptionError).message).toMatch(/checkpoint projection (does not inflate|inflates to \d+ bytes, not 50000)/);
    } finally {
      await store.close();
    }
  });

  it('a version 2 schema keeps its checkpoints, stored whole, through the migration that lets them be deflated', async () => {
    const schema = fresh('v2');
    const { store } = await openStore({ schema });
    const big = 'y'.repeat(40_000);
    await store.checkpoints.save('small', 'kept');
    await store.checkpoints.save('big', 'replaced below');
    await store.close();
    // What a version 2 schema lacks, and a checkpoint as version 2 wrote it: whole, whatever its size.
    await adminPool().query(`ALTER TABLE "${schema}".checkpoints DROP COLUMN inflated_size; UPDATE "${schema}".schema_version SET version = 2`);
    await adminPool().query(`UPDATE "${schema}".checkpoints SET data = convert_to($1, 'UTF8') WHERE name = 'big'`, [big]);
    const { store: reopened } = await openStore({ schema });
    try {
      expect(await reopened.checkpoints.load('small')).toBe('kept');
      expect(await reopened.checkpoints.load('big')).toBe(big);
      const { rows } = await adminPool().query(`SELECT version FROM "${schema}".schema_version`);
      expect(rows).toEqual([{ version: SCHEMA_VERSION }]);
    } finally {
      await reopened.close();
    }
  });

  it("the feed's first page is planned as at most one page, whatever the statistics: guessed larger, it was compiled by JIT on every read", async () => {
    const { store, schema } = await openStore({ schema: fresh('plan') });
    try {
      await store.append(
        's',
        Array.from({ length: 2_000 }, (_, i) => ({ type: 'A', data: i })),
        { expectedRevision: 'any' },
      );
      const { text } = queriesFor(schema).feedFirst([1]);
      const { rows } = await adminPool().query(`EXPLAIN (FORMAT JSON) ${text}`, [1]);
      const plan = (rows[0] as { 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] })['QUERY PLAN'][0].Plan;
      expect(plan['Plan Rows']).toBeLessThanOrEqual(PAGE_SIZE);
    } finally {
      await store.close();
    }
  });
});
