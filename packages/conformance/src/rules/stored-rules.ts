import { describe, expect, it, type TestContext } from 'vitest';
import type { EventStore, NewEvent, StoredEvent, StreamId } from '@sessionfold/core/kernel';
import { toStoredEvent } from '@sessionfold/core/store-kit';
import { expectClosed, expectInvalid, readFeed, readStream, skipWithoutMember, snapshotOf, streamId, type SuiteContext } from '../support.js';

/** Data whose JSON text is easy to get wrong: integer-like keys, escapes, non-ASCII, numbers at the edges, nesting. */
const AWKWARD: NewEvent[] = [
  { type: 'A', data: { b: 1, 10: 'ten', 2: 'two', a: [true, false, null] }, eventId: 'stored-1' },
  { type: 'Ä "quoted" \\ type', data: 'line\nbreak \u2028 "é" 😀 \u0001' },
  { type: 'C', data: [1e21, -0, 0.1, 123456789012345680000, -5e-324, 1.7976931348623157e308], schemaVersion: 2 },
  { type: 'D', data: { nested: { deeper: { list: [{}, [], ''] } }, '': 'empty key', ',"data":': 'member-like key' } },
  { type: 'E', data: null },
  { type: 'F', data: 42 },
];

async function collect(events: AsyncIterable<StoredEvent>): Promise<StoredEvent[]> {
  const all: StoredEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

/** The store's `readStored` and `readAllStored`, or a skip (printed) when it has neither. */
function storedReads(t: TestContext, store: EventStore): Required<Pick<EventStore, 'readStored' | 'readAllStored'>> {
  skipWithoutMember(t, store, 'readStored');
  if (store.readAllStored === undefined) return expect.fail('a store with readStored has readAllStored too');
  return { readStored: store.readStored.bind(store), readAllStored: store.readAllStored.bind(store) };
}

/** `readStored` / `readAllStored`: the same reads as `read` / `readAll`, each data as exactly its `JSON.stringify` text. */
export function describeStoredReadRules(ctx: SuiteContext): void {
  describe('readStored, readAllStored [optional members]', () => {
    it('readStored gives the revision, snapshot and events of read, each data as its JSON.stringify text', async (t) => {
      const { store } = await ctx.fresh();
      const { readStored } = storedReads(t, store);
      const s: StreamId = streamId();
      await store.append(s, AWKWARD, { expectedRevision: 'no_stream' });
      await store.compact(s, snapshotOf(s, 2, { folded: 2 }));
      await store.append(s, [{ type: 'G', data: { after: 'snapshot' } }], { expectedRevision: AWKWARD.length });
      for (const fromRevision of [undefined, 1, 2, 3, 5, 7, 8]) {
        const parsed = await readStream(store, s, fromRevision);
        const stored = await readStored(s, fromRevision === undefined ? undefined : { fromRevision });
        const events = await collect(stored.events);
        expect({ revision: stored.revision, snapshot: stored.snapshot }, `fromRevision ${fromRevision}`).toEqual({
          revision: parsed.revision,
          snapshot: parsed.snapshot,
        });
        expect(events, `fromRevision ${fromRevision}`).toEqual(parsed.events.map(toStoredEvent));
        for (const [index, event] of events.entries()) expect(event.dataJson).toBe(JSON.stringify(parsed.events[index]?.data));
      }
    });

    it('readStored of a missing stream reads as revision 0 with no events', async (t) => {
      const { store } = await ctx.fresh();
      const { readStored } = storedReads(t, store);
      const read = await readStored(streamId());
      expect(read.revision).toBe(0);
      expect(read.snapshot).toBeUndefined();
      expect(await collect(read.events)).toEqual([]);
    });

    it('readAllStored gives the records of readAll, $snapshot and $deleted included, from any position', async (t) => {
      const { store } = await ctx.fresh();
      const { readAllStored } = storedReads(t, store);
      const [a, b] = [streamId('a'), streamId('b')];
      await store.append(a, AWKWARD, { expectedRevision: 'no_stream' });
      await store.append(b, [{ type: 'B1', data: { n: 1 }, eventId: 'b-1' }], { expectedRevision: 'no_stream' });
      await store.compact(a, snapshotOf(a, 3, { state: ['x', { 1: 'y' }] }));
      await store.deleteStream(b, { expectedRevision: 1 });
      await store.append(a, [{ type: 'H', data: { late: true } }], { expectedRevision: AWKWARD.length });
      const parsed = await readFeed(store);
      expect(parsed.map((record) => record.type)).toContain('$snapshot');
      expect(parsed.map((record) => record.type)).toContain('$deleted');
      expect(await collect(readAllStored())).toEqual(parsed.map(toStoredEvent));
      for (const record of parsed) {
        const from = await collect(readAllStored({ fromPosition: record.position }));
        expect(from, `fromPosition ${record.position}`).toEqual((await readFeed(store, record.position)).map(toStoredEvent));
      }
    });

    it('refuses a bad stream id and, after close, rejects with StoreClosedError', async (t) => {
      const harness = await ctx.fresh();
      const { readStored, readAllStored } = storedReads(t, harness.store);
      await expectInvalid(() => readStored('../escape'));
      await harness.close();
      await expectClosed(() => readStored(streamId()));
      await expectClosed(() => collect(readAllStored()));
    });
  });
}
