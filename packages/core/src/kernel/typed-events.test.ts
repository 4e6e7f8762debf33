import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { foldStream, memoryStore, typedEventStore, type StreamReducer } from '../index.js';
import type { JsonValue } from './json.js';
import type { DeletedRecord, EventStore, FeedRecord, NewEvent, RecordedEvent, SnapshotRecord } from './port.js';

type Counted = { type: 'Added'; data: { amount: number } } | { type: 'Reset'; data: null };

describe('events typed by an application union', () => {
  it('a typed store takes only the union, and its fold narrows each event by type', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    // #region typed-events-example
    type AccountEvent =
      | { type: 'Opened'; data: { owner: string } }
      | { type: 'Deposited'; data: { amount: number } }
      | { type: 'Withdrawn'; data: { amount: number } };

    const balance: StreamReducer<number, AccountEvent> = {
      schemaVersion: 1,
      initial: () => 0,
      apply(state, event) {
        switch (event.type) {
          case 'Opened':
            return state;
          case 'Deposited':
            return state + event.data.amount;
          case 'Withdrawn':
            return state - event.data.amount;
          default: {
            // Every type is handled: a type added to the union fails to compile here.
            const unhandled: never = event;
            return unhandled;
          }
        }
      },
      toSnapshot: (state) => state,
      fromSnapshot: (state) => state as number,
    };

    // The application's statement that these streams hold only `AccountEvent`s (nothing is checked at run time).
    const store = typedEventStore<AccountEvent>(memoryStore());
    await store.append(
      'account-1',
      [
        { type: 'Opened', data: { owner: 'ada' } },
        { type: 'Deposited', data: { amount: 30 } },
        { type: 'Withdrawn', data: { amount: 12 } },
      ],
      { expectedRevision: 'no_stream' },
    );
    console.log((await foldStream(store, 'account-1', balance)).state); // 18
    // #endregion typed-events-example
    expect(log).toHaveBeenCalledWith(18);
    log.mockRestore();

    // Compiled, never called: a store does not check shapes at run time.
    const refused = () => {
      // @ts-expect-error: no such event type
      void store.append('account-1', [{ type: 'Closed', data: {} }], { expectedRevision: 'any' });
      // @ts-expect-error: Deposited data is an amount
      void store.append('account-1', [{ type: 'Deposited', data: { owner: 'x' } }], { expectedRevision: 'any' });
    };
    expect(refused).toBeTypeOf('function');
    const read = await store.read('account-1');
    for await (const event of read.events) {
      expectTypeOf(event).toEqualTypeOf<RecordedEvent<AccountEvent>>();
      if (event.type === 'Opened') expectTypeOf(event.data).toEqualTypeOf<{ owner: string }>();
    }
  });

  it('the feed yields the union and the reserved records, each narrowed by its type', async () => {
    const store = typedEventStore<Counted>(memoryStore());
    await store.append('counter-1', [{ type: 'Added', data: { amount: 5 } }], { expectedRevision: 'no_stream' });
    await store.append('counter-2', [{ type: 'Reset', data: null }], { expectedRevision: 'no_stream' });
    await store.deleteStream('counter-2', { expectedRevision: 1 });
    const seen: string[] = [];
    for await (const record of store.readAll()) {
      expectTypeOf(record).toEqualTypeOf<FeedRecord<Counted>>();
      if (record.type === '$snapshot') expectTypeOf(record.data.identity.stream).toEqualTypeOf<string>();
      else if (record.type === '$deleted') expectTypeOf(record).toEqualTypeOf<DeletedRecord>();
      else expectTypeOf(record.type).toEqualTypeOf<Counted['type']>();
      seen.push(record.type);
    }
    expect(seen).toEqual(['Added', '$deleted']);
    expectTypeOf<Extract<FeedRecord<Counted>, { type: '$snapshot' }>>().toEqualTypeOf<SnapshotRecord>();
  });

  it('the defaults stay untyped: any type, JSON data, and an untyped store folds with a typed reducer', async () => {
    expectTypeOf<NewEvent['type']>().toEqualTypeOf<string>();
    expectTypeOf<RecordedEvent['data']>().toEqualTypeOf<JsonValue>();
    // A record of the feed still reads as a plain event.
    expectTypeOf<FeedRecord>().toExtend<RecordedEvent>();
    const total: StreamReducer<number, Counted> = {
      schemaVersion: 1,
      initial: () => 0,
      apply: (state, event) => (event.type === 'Added' ? state + event.data.amount : 0),
      toSnapshot: (state) => state,
      fromSnapshot: (state) => state as number,
    };
    const store: EventStore = memoryStore();
    await store.append('counter-3', [{ type: 'Added', data: { amount: 7 } }], { expectedRevision: 'no_stream' });
    expect((await foldStream(store, 'counter-3', total)).state).toBe(7);
  });
});
