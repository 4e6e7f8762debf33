import { describe, expect, it } from 'vitest';
import {
  compactStream,
  CorruptionError,
  foldStream,
  InvalidInputError,
  memoryStore,
  MissingMigrationError,
  prepareReducer,
  SchemaVersionTooNewError,
  type EventStore,
  type JsonValue,
  type NewEvent,
  type RecordedEvent,
  type StreamReducer,
} from '@sessionfold/core/kernel';
import { checkSnapshotIdentity } from './fold.js';

/**
 * A tally in three state versions: v1 `{ n }`, v2 `{ count }`, v3 `{ count, seen: [types] }`. Event `Added`
 * has three data versions: v1 a bare number, v2 `{ by }`, v3 `{ amount }`; `Noted` has only version 1.
 */
interface Tally {
  count: number;
  seen: string[];
}

const seen: RecordedEvent[] = [];

function tally(overrides: Partial<StreamReducer<Tally>> = {}): StreamReducer<Tally> {
  return {
    schemaVersion: 3,
    migrations: [
      // Out of order on purpose: steps are found by the version they start from.
      { from: 2, to: 3, migrate: (state) => ({ ...(state as { count: number }), seen: [] }) },
      { from: 1, to: 2, migrate: (state) => ({ count: (state as { n: number }).n }) },
    ],
    upcasters: {
      Added: [
        { from: 1, to: 2, upcast: (data) => ({ by: data }) },
        { from: 2, to: 3, upcast: (data) => ({ amount: (data as { by: number }).by }) },
      ],
    },
    initial: () => ({ count: 0, seen: [] }),
    apply: (state, event) => {
      seen.push(event);
      const amount = event.type === 'Added' ? (event.data as { amount: number }).amount : 0;
      return { count: state.count + amount, seen: [...state.seen, `${event.type}@${event.schemaVersion}`] };
    },
    toSnapshot: (state) => state as unknown as JsonValue,
    fromSnapshot: (state) => {
      const value = state as { count?: unknown; seen?: unknown };
      if (typeof value.count !== 'number' || !Array.isArray(value.seen)) throw new Error(`not a v3 tally: ${JSON.stringify(state)}`);
      return state as unknown as Tally;
    },
    ...overrides,
  };
}

async function storeWith(stream: string, events: NewEvent[], snapshot?: { revision: number; state: JsonValue; schemaVersion: number }): Promise<EventStore> {
  const store = memoryStore();
  await store.append(stream, events, { expectedRevision: 'no_stream' });
  if (snapshot)
    await store.compact(stream, { revision: snapshot.revision, state: snapshot.state, identity: { stream, schemaVersion: snapshot.schemaVersion } });
  return store;
}

async function feedOf(store: EventStore): Promise<unknown[]> {
  const records: unknown[] = [];
  for await (const record of store.readAll()) records.push(record);
  return records;
}

describe('state migrations', () => {
  it('a snapshot of an older version is migrated through the chain before fromSnapshot sees it', async () => {
    const store = await storeWith('t-1', [{ type: 'Noted', data: null }], { revision: 1, state: { n: 5 }, schemaVersion: 1 });
    await store.append('t-1', [{ type: 'Added', data: { amount: 2 }, schemaVersion: 3 }], { expectedRevision: 1 });
    expect(await foldStream(store, 't-1', tally())).toEqual({ state: { count: 7, seen: ['Added@3'] }, revision: 2, exists: true });
  });

  it('the next compaction writes the current version, which then folds without migrating', async () => {
    const store = await storeWith('t-1', [{ type: 'Noted', data: null }], { revision: 1, state: { count: 4 }, schemaVersion: 2 });
    const before = await foldStream(store, 't-1', tally());
    expect(await compactStream(store, 't-1', tally())).toBe(1);
    const read = await store.read('t-1');
    expect(read.snapshot?.identity.schemaVersion).toBe(3);
    expect(read.snapshot?.state).toEqual({ count: 4, seen: [] });
    expect(await foldStream(store, 't-1', tally({ migrations: [] }))).toEqual(before);
  });

  it('a snapshot older than the reducer with no step from its version is MissingMigrationError naming the gap', async () => {
    const store = await storeWith('t-1', [{ type: 'Noted', data: null }], { revision: 1, state: { n: 5 }, schemaVersion: 1 });
    const before = await feedOf(store);
    const reducer = tally({ migrations: [{ from: 2, to: 3, migrate: (state) => state }] });
    const error = await foldStream(store, 't-1', reducer).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingMigrationError);
    expect(error).toMatchObject({ code: 'missing_migration', stream: 't-1', subject: 'snapshot', revision: 1, from: 1, to: 3 });
    expect((error as Error).message).toMatch(/migration from schema version 1 on its way to 3/);
    await expect(compactStream(store, 't-1', reducer)).rejects.toBeInstanceOf(MissingMigrationError);
    expect(await feedOf(store)).toEqual(before);
  });

  it('a snapshot newer than the reducer is SchemaVersionTooNewError naming both versions, and nothing is reset', async () => {
    const store = await storeWith('t-1', [{ type: 'Noted', data: null }], { revision: 1, state: { future: true }, schemaVersion: 4 });
    const before = await feedOf(store);
    const error = await foldStream(store, 't-1', tally()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaVersionTooNewError);
    expect(error).toMatchObject({ code: 'schema_version_too_new', stream: 't-1', subject: 'snapshot', revision: 1, found: 4, supported: 3 });
    expect((error as Error).message).toMatch(/schema version 4, newer than the 3/);
    await expect(compactStream(store, 't-1', tally())).rejects.toBeInstanceOf(SchemaVersionTooNewError);
    expect(await feedOf(store)).toEqual(before);
  });

  it('checkSnapshotIdentity: another stream is corruption; an older version passes only with a migration path', () => {
    const snapshot = (schemaVersion: number, stream = 't-1') => ({ revision: 3, state: {}, identity: { stream, schemaVersion } });
    expect(() => checkSnapshotIdentity('t-1', snapshot(3, 't-2'), tally())).toThrow(CorruptionError);
    expect(() => checkSnapshotIdentity('t-1', snapshot(1), tally())).not.toThrow();
    expect(() => checkSnapshotIdentity('t-1', snapshot(3), 3)).not.toThrow();
    expect(() => checkSnapshotIdentity('t-1', snapshot(2), 3)).toThrow(expect.objectContaining({ code: 'missing_migration', from: 2, to: 3 }));
    expect(() => checkSnapshotIdentity('t-1', snapshot(4), 3)).toThrow(expect.objectContaining({ code: 'schema_version_too_new', found: 4, supported: 3 }));
  });
});

describe('event upcasters', () => {
  it('upcast events by type and version: the reducer sees each type at its newest version, others untouched', async () => {
    const store = await storeWith('t-1', [
      { type: 'Added', data: 1 },
      { type: 'Added', data: { by: 10 }, schemaVersion: 2 },
      { type: 'Added', data: { amount: 100 }, schemaVersion: 3 },
      { type: 'Noted', data: 'kept' },
    ]);
    seen.length = 0;
    const folded = await foldStream(store, 't-1', tally());
    expect(folded.state).toEqual({ count: 111, seen: ['Added@3', 'Added@3', 'Added@3', 'Noted@1'] });
    expect(seen.map((event) => [event.revision, event.data])).toEqual([
      [1, { amount: 1 }],
      [2, { amount: 10 }],
      [3, { amount: 100 }],
      [4, 'kept'],
    ]);
    // The stored events are not changed by reading them.
    const read = await store.read('t-1');
    const stored = [];
    for await (const event of read.events) stored.push([event.data, event.schemaVersion]);
    expect(stored[0]).toEqual([1, 1]);
  });

  it('an upcaster gets the stored event for context, and an event already newest is handed on as the same object', () => {
    const contexts: Array<[number, number]> = [];
    const reducer = tally({
      upcasters: { Added: [{ from: 1, to: 2, upcast: (data, event) => (contexts.push([event.revision, event.schemaVersion]), { amount: data }) }] },
    });
    const prepared = prepareReducer(reducer);
    const event = (schemaVersion: number, type = 'Added'): RecordedEvent => ({
      streamId: 't-1',
      type,
      data: 3,
      schemaVersion,
      revision: 7,
      position: 9,
      recordedAt: '2026-01-01T00:00:00.000Z',
    });
    expect(prepared.upcast(event(1))).toEqual({ ...event(1), data: { amount: 3 }, schemaVersion: 2 });
    expect(contexts).toEqual([[7, 1]]);
    const newest = event(2);
    expect(prepared.upcast(newest)).toBe(newest);
    const plain = event(1, 'Noted');
    expect(prepared.upcast(plain)).toBe(plain);
    expect([prepared.eventVersion('Added'), prepared.eventVersion('Noted')]).toEqual([2, 1]);
  });

  it.each([
    ['a type with upcasters', { type: 'Added', data: 1, schemaVersion: 4 }, 3],
    ['a type without upcasters', { type: 'Noted', data: 1, schemaVersion: 2 }, 1],
  ])('an event of %s newer than its type knows is SchemaVersionTooNewError naming type, revision and both versions', async (_label, newer, supported) => {
    const store = await storeWith('t-1', [{ type: 'Noted', data: null }, newer]);
    const error = await foldStream(store, 't-1', tally()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaVersionTooNewError);
    expect(error).toMatchObject({ stream: 't-1', subject: 'event', eventType: newer.type, revision: 2, found: newer.schemaVersion, supported });
    expect((error as Error).message).toContain(`Event 2 of t-1 (${newer.type}) has schema version ${newer.schemaVersion}, newer than the ${supported}`);
  });

  it('an older event with no upcaster from its version is MissingMigrationError naming the type and the gap', async () => {
    const store = await storeWith('t-1', [{ type: 'Added', data: 1 }]);
    const reducer = tally({ upcasters: { Added: [{ from: 2, to: 3, upcast: (data) => data }] } });
    const error = await foldStream(store, 't-1', reducer).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingMigrationError);
    expect(error).toMatchObject({ code: 'missing_migration', subject: 'event', eventType: 'Added', revision: 1, from: 1, to: 3 });
    expect((error as Error).message).toContain('Event 1 of t-1 (Added) needs an upcaster from schema version 1 on its way to 3');
  });
});

describe('declarations', () => {
  it.each([
    ['a migration that does not go forward', { migrations: [{ from: 2, to: 2, migrate: (s: JsonValue) => s }] }, 'reducer.migrations[0]'],
    ['a migration past the reducer version', { migrations: [{ from: 2, to: 4, migrate: (s: JsonValue) => s }] }, 'reducer.migrations[0]'],
    [
      'two migrations from one version',
      {
        migrations: [
          { from: 1, to: 2, migrate: (s: JsonValue) => s },
          { from: 1, to: 3, migrate: (s: JsonValue) => s },
        ],
      },
      'reducer.migrations[1]',
    ],
    ['an upcaster from version 0', { upcasters: { Added: [{ from: 0, to: 1, upcast: (d: JsonValue) => d }] } }, 'reducer.upcasters["Added"][0]'],
  ])('%s is InvalidInputError naming it', async (_label, overrides, field) => {
    const store = await storeWith('t-1', [{ type: 'Noted', data: null }]);
    const error = await foldStream(store, 't-1', tally(overrides)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error).toMatchObject({ field });
  });
});
