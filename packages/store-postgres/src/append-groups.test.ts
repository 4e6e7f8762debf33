import { ConcurrencyError, InvalidInputError, type EventStore, type NewEvent } from '@sessionfold/core/kernel';
import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from './schema.js';
import { adminPool, collect, openStore, schemasDroppedAfterAll, withStoreOn } from './test-support.fixture.js';

/**
 * Appends issued in one turn share one call of `append_batches`: each must be decided against its stream as the
 * appends before it in the group left it, event ids included, exactly as if they had been sent one by one.
 */
describe('postgresStore: appends decided in order inside one group', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();
  const event = (type: string, eventId?: string): NewEvent => ({ type, data: { type }, ...(eventId === undefined ? {} : { eventId }) });
  const inStore = (label: string, work: (store: EventStore, schema: string) => Promise<void>) => withStoreOn(fresh(label), work);

  it('a retry of an append earlier in the group is answered with its result', () =>
    inStore('g_retry', async (store) => {
      const [first, retry] = await Promise.all([
        store.append('s', [event('A', 'x'), event('B')], { expectedRevision: 'no_stream' }),
        store.append('s', [event('A', 'x')], { expectedRevision: 'no_stream' }),
      ]);
      expect(retry).toEqual(first);
      expect((await collect(store.readAll())).map((e) => e.type)).toEqual(['A', 'B']);
    }));

  it('a later event id written earlier in the group is InvalidInputError; one of a refused append is not known', () =>
    inStore('g_later', async (store) => {
      const results = await Promise.allSettled([
        store.append('s', [event('A', 'x')], { expectedRevision: 'no_stream' }),
        store.append('s', [event('B', 'y'), event('C', 'x')], { expectedRevision: 1 }),
        store.append('t', [event('D', 'z')], { expectedRevision: 5 }),
        store.append('t', [event('E', 'z')], { expectedRevision: 'no_stream' }),
      ]);
      expect(results[0]).toMatchObject({ status: 'fulfilled', value: { revision: 1 } });
      expect(results[1]).toMatchObject({ status: 'rejected', reason: expect.any(InvalidInputError) });
      expect(((results[1] as PromiseRejectedResult).reason as InvalidInputError).message).toContain('events[1].eventId');
      expect(results[2]).toMatchObject({ status: 'rejected', reason: expect.any(ConcurrencyError) });
      expect(results[3]).toMatchObject({ status: 'fulfilled', value: { revision: 1 } });
    }));

  it('never_existed is refused for a deleted stream and accepted for a new one in the same group', () =>
    inStore('g_never', async (store) => {
      await store.append('gone', [event('A')], { expectedRevision: 'no_stream' });
      await store.deleteStream('gone', { expectedRevision: 1 });
      const results = await Promise.allSettled([
        store.append('gone', [event('B')], { expectedRevision: 'never_existed' }),
        store.append('new', [event('C')], { expectedRevision: 'never_existed' }),
        store.append('new', [event('D')], { expectedRevision: 'never_existed' }),
      ]);
      expect(results[0]).toMatchObject({ status: 'rejected', reason: expect.any(ConcurrencyError) });
      expect(results[1]).toMatchObject({ status: 'fulfilled', value: { revision: 1 } });
      expect(results[2]).toMatchObject({ status: 'rejected', reason: expect.any(ConcurrencyError) });
    }));

  it('a schema of the previous version gets the new append function on open and keeps its events', () =>
    inStore('g_upgrade', async (store, schema) => {
      await store.append('s', [event('A', 'x')], { expectedRevision: 'no_stream' });
      await store.close();
      // As the previous release left it: its version, and an append function that no longer takes -2.
      await adminPool().query(`UPDATE "${schema}".schema_version SET version = ${SCHEMA_VERSION - 1};
        CREATE OR REPLACE FUNCTION "${schema}".append_batches(p_streams text[], p_expected bigint[], p_counts integer[], p_types text[], p_data text[], p_ids text[], p_versions integer[], p_at text)
        RETURNS TABLE (status smallint, revision bigint, pos bigint) LANGUAGE sql AS $$ SELECT 9::smallint, 0::bigint, 0::bigint $$`);
      const { store: reopened } = await openStore({ schema });
      try {
        expect(await reopened.append('s', [event('A', 'x')], { expectedRevision: 'any' })).toEqual({ revision: 1, position: 1 });
        expect(await reopened.append('s', [event('B')], { expectedRevision: 1 })).toEqual({ revision: 2, position: 2 });
        const { rows } = await adminPool().query(`SELECT version FROM "${schema}".schema_version`);
        expect(rows).toEqual([{ version: SCHEMA_VERSION }]);
      } finally {
        await reopened.close();
      }
    }));
});
