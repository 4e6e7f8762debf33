import { describe, expect, it } from 'vitest';
import { StorageError } from '@sessionfold/core/kernel';
import { postgresStore, type PostgresEventStore } from './index.js';
import { PG_URL, adminPool, collect, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

describe.skipIf(PG_URL === undefined)('postgresStore: checkpoints and the store identity', () => {
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
      expect(rows).toEqual([{ version: 2 }]);
    } finally {
      for (const { store: s } of opened) await s.close();
    }
  });
});
