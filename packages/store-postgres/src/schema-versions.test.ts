import { describe, expect, it } from 'vitest';
import type { AppendResult, EventStore, NewEvent } from '@sessionfold/core/kernel';
import { adminPool, collect, schemasDroppedAfterAll, withStoreOn } from './test-support.fixture.js';

/** [stream, type, schemaVersion] of every event of the feed, in position order. */
async function versions(store: EventStore): Promise<Array<[string, string, number]>> {
  return (await collect(store.readAll())).map((e) => [e.streamId, e.type, e.schemaVersion]);
}

/**
 * Groups of every shape (distinct streams without event ids; one stream several times without ids; event ids
 * after earlier appends of the same stream): appends issued in one turn share a group, and every event must
 * keep its version.
 */
describe('postgresStore: event schema versions in every path of a group commit', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();
  const event = (type: string, schemaVersion?: number): NewEvent => ({ type, data: { type }, ...(schemaVersion === undefined ? {} : { schemaVersion }) });
  const inStore = (label: string, work: (store: EventStore, schema: string) => Promise<void>) => withStoreOn(fresh(label), work);

  it('appends to distinct streams without event ids', () =>
    inStore('v_set', async (store) => {
      await Promise.all([
        store.append('a', [event('A1', 2), event('A2')], { expectedRevision: 'no_stream' }),
        store.append('b', [event('B1', 7)], { expectedRevision: 'no_stream' }),
      ]);
      expect(await versions(store)).toEqual([
        ['a', 'A1', 2],
        ['a', 'A2', 1],
        ['b', 'B1', 7],
      ]);
    }));

  it('appends to one stream several times without event ids', () =>
    inStore('v_one', async (store) => {
      await Promise.all([
        store.append('s', [event('S1', 3)], { expectedRevision: 'no_stream' }),
        store.append('s', [event('S2'), event('S3', 4)], { expectedRevision: 1 }),
        store.append('t', [event('T1', 5)], { expectedRevision: 'any' }),
      ]);
      expect(await versions(store)).toEqual([
        ['s', 'S1', 3],
        ['s', 'S2', 1],
        ['s', 'S3', 4],
        ['t', 'T1', 5],
      ]);
    }));

  it('appends with event ids, one after pending rows of its stream, and a retry that names another version', () =>
    inStore('v_ids', async (store) => {
      const results: AppendResult[] = await Promise.all([
        store.append('s', [event('S1', 6)], { expectedRevision: 'no_stream' }),
        store.append('s', [{ ...event('S2', 8), eventId: 'two' }, event('S3')], { expectedRevision: 1 }),
        store.append('u', [{ ...event('U1', 9), eventId: 'one' }], { expectedRevision: 'no_stream' }),
      ]);
      const retried = await store.append('s', [{ ...event('S2', 10), eventId: 'two' }], { expectedRevision: 'any' });
      expect(retried).toEqual(results[1]);
      expect(await versions(store)).toEqual([
        ['s', 'S1', 6],
        ['s', 'S2', 8],
        ['s', 'S3', 1],
        ['u', 'U1', 9],
      ]);
    }));

  it('$snapshot and $deleted records are stored with version 1', () =>
    inStore('v_records', async (store, schema) => {
      await store.append('kept', [event('K1', 2), event('K2', 3)], { expectedRevision: 'no_stream' });
      await store.compact('kept', { revision: 1, state: null, identity: { stream: 'kept', schemaVersion: 5 } });
      await store.append('gone', [event('G1', 4)], { expectedRevision: 'no_stream' });
      await store.deleteStream('gone', { expectedRevision: 1 });
      const { rows } = await adminPool().query<{ type: string; schema_version: number }>(
        `SELECT type, schema_version FROM "${schema}".events ORDER BY position`,
      );
      expect(rows).toEqual([
        { type: 'K2', schema_version: 3 },
        { type: '$snapshot', schema_version: 1 },
        { type: '$deleted', schema_version: 1 },
      ]);
    }));
});
