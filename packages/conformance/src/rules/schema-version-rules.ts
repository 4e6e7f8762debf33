import { describe, expect, it } from 'vitest';
import { copyStore, memoryStore, type NewEvent } from '@sessionfold/core/kernel';
import { MAX_EVENT_SCHEMA_VERSION } from '@sessionfold/core/store-kit';
import { expectInvalid, observe, skipWithout, readFeed, readStream, snapshotOf, streamId, type SuiteContext } from '../support.js';

/** Event schema versions: stored as given (1 when left out), returned by every read, carried by a copy. */
export function describeSchemaVersionRules(ctx: SuiteContext): void {
  describe('event schema versions', () => {
    const versioned: NewEvent[] = [
      { type: 'Plain', data: { n: 1 } },
      { type: 'Upgraded', data: { n: 2 }, schemaVersion: 3, eventId: 'v-3' },
      { type: 'Explicit', data: { n: 3 }, schemaVersion: 1 },
      { type: 'Largest', data: null, schemaVersion: MAX_EVENT_SCHEMA_VERSION },
    ];
    const versionsOf = (events: Array<{ type: string; schemaVersion: number }>) => events.map((e) => [e.type, e.schemaVersion]);
    const expected = [
      ['Plain', 1],
      ['Upgraded', 3],
      ['Explicit', 1],
      ['Largest', MAX_EVENT_SCHEMA_VERSION],
    ];

    it('read and readAll return each event with the schema version it was appended with, 1 when it had none', async () => {
      const harness = await ctx.fresh();
      const s = streamId();
      await harness.store.append(s, versioned, { expectedRevision: 'no_stream' });
      expect(versionsOf((await readStream(harness.store, s)).events)).toEqual(expected);
      expect(versionsOf(await readFeed(harness.store))).toEqual(expected);
      expect(versionsOf((await readStream(harness.store, s, 2)).events)).toEqual(expected.slice(1));
      // An idempotent retry answers with the first append, whatever version the retry names.
      expect(
        await harness.store.append(s, [{ type: 'Upgraded', data: { n: 2 }, schemaVersion: 9, eventId: 'v-3' }], { expectedRevision: 'any' }),
      ).toMatchObject({
        revision: 4,
      });
    });

    it('schema versions survive a reopen', async (t) => {
      skipWithout(t, !ctx.caps.reopen, 'needs capabilities.reopen');
      const harness = await ctx.fresh();
      const s = streamId();
      await harness.store.append(s, versioned, { expectedRevision: 'no_stream' });
      const reopened = await harness.reopen();
      expect(versionsOf((await readStream(reopened, s)).events)).toEqual(expected);
      expect(versionsOf(await readFeed(reopened))).toEqual(expected);
    });

    it('events after a snapshot keep their versions, and $snapshot and $deleted records have version 1', async () => {
      const { store } = await ctx.fresh();
      const [s, gone] = [streamId(), streamId('gone')];
      await store.append(s, versioned, { expectedRevision: 'no_stream' });
      await store.compact(s, snapshotOf(s, 2));
      await store.append(gone, [{ type: 'Only', data: 1, schemaVersion: 2 }], { expectedRevision: 'no_stream' });
      await store.deleteStream(gone, { expectedRevision: 1 });
      const read = await readStream(store, s);
      expect(versionsOf(read.events)).toEqual(expected.slice(2));
      expect(versionsOf(await readFeed(store))).toEqual([...expected.slice(2), ['$snapshot', 1], ['$deleted', 1]]);
    });

    it('copyStore carries every event schema version, into this store and out of it', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const source = memoryStore();
      await source.append(s, versioned, { expectedRevision: 'no_stream' });
      await copyStore(source, store);
      expect(versionsOf((await readStream(store, s)).events)).toEqual(expected);
      const back = memoryStore();
      await copyStore(store, back);
      expect(versionsOf((await readStream(back, s)).events)).toEqual(expected);
      // The same events with another version are a different history: a second copy refuses to mix them.
      const other = memoryStore();
      await other.append(
        s,
        versioned.map((event) => ({ ...event, schemaVersion: 2 })),
        { expectedRevision: 'no_stream' },
      );
      await expectInvalid(() => copyStore(other, store));
    });

    it.each([
      ['0', 0],
      ['-1', -1],
      ['1.5', 1.5],
      ['NaN', Number.NaN],
      ['Infinity', Number.POSITIVE_INFINITY],
      ['past the largest', MAX_EVENT_SCHEMA_VERSION + 1],
      ['a string', '2'],
      ['null', null],
      ['a bigint', 2n],
    ])('a schema version of %s is InvalidInputError naming the field, and writes nothing', async (_label, schemaVersion) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await store.append(s, [{ type: 'Before', data: 1 }], { expectedRevision: 'no_stream' });
      const before = await observe(store, [s]);
      const error = await expectInvalid(() =>
        store.append(s, [{ type: 'Good', data: 1 }, { type: 'Bad', data: 2, schemaVersion } as unknown as NewEvent], { expectedRevision: 1 }),
      );
      expect(error.field).toBe('events[1].schemaVersion');
      expect(await observe(store, [s])).toEqual(before);
    });

    it('a schema version is read once: what a getter answers first is what is stored', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      let reads = 0;
      const event = { type: 'Shifting', data: null } as NewEvent;
      Object.defineProperty(event, 'schemaVersion', { enumerable: true, get: () => (reads++ === 0 ? 2 : 'bad') });
      await store.append(s, [event], { expectedRevision: 'no_stream' });
      expect(reads).toBe(1);
      expect(versionsOf((await readStream(store, s)).events)).toEqual([['Shifting', 2]]);
    });
  });
}
