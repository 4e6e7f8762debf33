import { describe, expect, it } from 'vitest';
import { compactStream, foldStream, type StreamReducer } from '../kernel/fold.js';
import { memoryStore, type EventStore } from '../kernel/index.js';
import { sessionEvent } from './events.js';
import { sessionStream } from './ids.js';
import { sessionReducer } from './reducer.js';
import { StateCache } from './state-cache.js';

const STREAM = sessionStream('9078bb6e-0931-4477-9ce9-b1430d0335a2');
const AT = '2026-07-23T00:00:00.000Z';
const line = (text: string) => sessionEvent('TranscriptAppended', { at: AT, role: 'user-message', text });

/** A store that counts the events its reads hand out. */
function countingStore(inner: EventStore): { store: EventStore; delivered: () => number } {
  let delivered = 0;
  const store: EventStore = {
    ...inner,
    read: async (stream, options) => {
      const read = await inner.read(stream, options);
      async function* counted() {
        for await (const event of read.events) {
          delivered++;
          yield event;
        }
      }
      return { ...read, events: counted() };
    },
  };
  return { store, delivered: () => delivered };
}

describe('StateCache', () => {
  it('reads only the events after the cached revision (plus the one it checks)', async () => {
    const { store, delivered } = countingStore(memoryStore());
    await store.append(
      STREAM,
      Array.from({ length: 50 }, (_, i) => line(`${i}`)),
      { expectedRevision: 'no_stream' },
    );
    const cache = new StateCache(store, sessionReducer);
    await cache.load(STREAM);
    const before = delivered();
    await store.append(STREAM, [line('new')], { expectedRevision: 50 });

    const loaded = await cache.load(STREAM);

    expect(delivered() - before).toBe(2);
    expect(loaded.revision).toBe(51);
    expect(loaded.state).toEqual((await foldStream(store, STREAM, sessionReducer)).state);
  });

  it('notices a stream deleted and written again past the cached revision', async () => {
    const store = memoryStore();
    const cache = new StateCache(store, sessionReducer);
    await store.append(STREAM, [line('old 1'), line('old 2')], { expectedRevision: 'no_stream' });
    await cache.load(STREAM);
    await store.deleteStream(STREAM, { expectedRevision: 2 });
    await store.append(STREAM, [line('new 1'), line('new 2'), line('new 3')], { expectedRevision: 'no_stream' });

    const loaded = await cache.load(STREAM);

    expect(loaded.state.log.flat().map((entry) => entry.text)).toEqual(['new 1', 'new 2', 'new 3']);
  });

  it('follows a compaction and a deletion', async () => {
    const store = memoryStore();
    const cache = new StateCache(store, sessionReducer);
    await store.append(STREAM, [line('a')], { expectedRevision: 'no_stream' });
    await cache.load(STREAM);
    await store.append(STREAM, [line('b')], { expectedRevision: 1 });
    await compactStream(store, STREAM, sessionReducer);
    await store.append(STREAM, [line('c')], { expectedRevision: 2 });
    expect((await cache.load(STREAM)).state).toEqual((await foldStream(store, STREAM, sessionReducer)).state);

    await store.deleteStream(STREAM, { expectedRevision: 3 });
    expect(await cache.load(STREAM)).toMatchObject({ exists: false, revision: 0 });
  });
});

describe('StateCache with a versioned reducer', () => {
  /** v2 of a counter: the state `{ n }` became `{ total }`, and `Add`'s data went from a number to `{ amount }`. */
  const counter: StreamReducer<{ total: number }> = {
    schemaVersion: 2,
    migrations: [{ from: 1, to: 2, migrate: (state) => ({ total: (state as { n: number }).n }) }],
    upcasters: { Add: [{ from: 1, to: 2, upcast: (data) => ({ amount: data }) }] },
    initial: () => ({ total: 0 }),
    apply: (state, event) => ({ total: state.total + (event.data as { amount: number }).amount }),
    toSnapshot: (state) => state,
    fromSnapshot: (state) => {
      if (typeof (state as { total?: unknown }).total !== 'number') throw new Error('not a v2 counter');
      return state as { total: number };
    },
  };

  it('migrates an older snapshot and upcasts older events, on the first load and when catching up', async () => {
    const store = memoryStore();
    await store.append('c-1', [{ type: 'Add', data: 1 }], { expectedRevision: 'no_stream' });
    await store.compact('c-1', { revision: 1, state: { n: 1 }, identity: { stream: 'c-1', schemaVersion: 1 } });
    await store.append(
      'c-1',
      [
        { type: 'Add', data: 2 },
        { type: 'Add', data: { amount: 4 }, schemaVersion: 2 },
      ],
      { expectedRevision: 1 },
    );
    const cache = new StateCache(store, counter);
    expect((await cache.load('c-1')).state).toEqual({ total: 7 });
    await store.append('c-1', [{ type: 'Add', data: 8 }], { expectedRevision: 3 });
    expect(await cache.load('c-1')).toMatchObject({ state: { total: 15 }, revision: 4 });
    await store.append('c-1', [{ type: 'Add', data: 16, schemaVersion: 3 }], { expectedRevision: 4 });
    await expect(cache.load('c-1')).rejects.toMatchObject({ code: 'schema_version_too_new', eventType: 'Add', found: 3, supported: 2 });
  });
});
