import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidInputError, type EventStore, type JsonValue, type NewEvent, type Snapshot } from '@sessionfold/core/kernel';
import { MAX_JSON_DEPTH } from '@sessionfold/core/store-kit';
import { appendTypes, expectInvalid, listStreams, observe, skipWithout, readFeed, readStream, snapshotOf, streamId, type SuiteContext } from '../support.js';

/** `levels` arrays nested in each other around a 0: `nested(2)` is `[[0]]`. */
function nested(levels: number): JsonValue {
  let value: JsonValue = 0;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/** An object whose `key` answers `values` in turn (the last one from then on) and counts how often it was read. */
function shifting<T>(key: string, values: readonly T[], rest: Record<string, unknown> = {}): { object: Record<string, unknown>; reads: () => number } {
  let count = 0;
  const object: Record<string, unknown> = { ...rest };
  Object.defineProperty(object, key, {
    enumerable: true,
    get: () => values[Math.min(count++, values.length - 1)],
  });
  return { object, reads: () => count };
}

function cyclic(): Record<string, unknown> {
  const node: Record<string, unknown> = { name: 'loop' };
  node.self = node;
  return node;
}

/** Strings a store could not keep identically everywhere (SQLite rewrites lone surrogates, PostgreSQL refuses U+0000). */
const BAD_TEXT: Array<[string, string]> = [
  ['a lone high surrogate', 'a\uD800b'],
  ['a lone low surrogate', '\uDC00'],
  ['a surrogate pair in the wrong order', '\uDE00\uD83D'],
  ['U+0000', 'a\u0000b'],
];

/** Data that cannot be read or serialized without the caller's code throwing or answering nonsense. */
const UNREADABLE_DATA: Array<[string, () => unknown]> = [
  [
    'a getter that throws',
    () => ({
      ok: 1,
      get boom(): number {
        throw new Error('getter failed');
      },
    }),
  ],
  [
    'a Proxy whose toJSON throws',
    () =>
      new Proxy(
        {},
        {
          get: (_t, key) =>
            key === 'toJSON'
              ? () => {
                  throw new Error('toJSON failed');
                }
              : undefined,
        },
      ),
  ],
  ['a Proxy whose toJSON answers a bigint', () => ({ inner: new Proxy({}, { get: (_t, key) => (key === 'toJSON' ? () => 1n : undefined) }) })],
  ['a Proxy whose toJSON answers undefined', () => new Proxy({}, { get: (_t, key) => (key === 'toJSON' ? () => undefined : undefined) })],
  [
    'a Proxy whose keys cannot be listed',
    () => ({
      inner: new Proxy(
        {},
        {
          ownKeys: () => {
            throw new Error('no keys');
          },
        },
      ),
    }),
  ],
  [`${MAX_JSON_DEPTH + 1} levels of nesting`, () => nested(MAX_JSON_DEPTH + 1)],
  ['10,000 levels of nesting', () => nested(10_000)],
  [
    '10,000 levels of nested objects',
    () => {
      let v: JsonValue = {};
      for (let i = 0; i < 10_000; i++) v = { v };
      return v;
    },
  ],
];

/**
 * Inputs are read once: every field a method reads (type, eventId, options, snapshot members) is read exactly once and
 * what was validated is what is stored. Text the port stores is well-formed Unicode without U+0000, nesting is
 * bounded by `MAX_JSON_DEPTH`, and whatever a caller's object throws or answers is `InvalidInputError`, never a raw error.
 */
export function describeInputReadingRules(ctx: SuiteContext): void {
  describe('inputs read once, text and nesting', () => {
    it.each(BAD_TEXT)('a type or eventId with %s is InvalidInputError and writes nothing', async (_label, text) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await expectInvalid(() => store.append(s, [{ type: text, data: null }], { expectedRevision: 'any' }));
      await expectInvalid(() => store.append(s, [{ type: 'A', data: null, eventId: text }], { expectedRevision: 'any' }));
      await expectInvalid(() =>
        store.append(
          s,
          [
            { type: 'A', data: null },
            { type: 'B', data: null, eventId: text },
          ],
          { expectedRevision: 'any' },
        ),
      );
      expect(await readFeed(store)).toEqual([]);
    });

    it('types, event ids and data with characters outside the BMP, and data with lone surrogates or U+0000, read back identically', async () => {
      const { store, reopen } = await ctx.fresh();
      const s = streamId();
      const events: NewEvent[] = [
        { type: 'Said 😀 é世', data: { text: 'a\uD800b\uDC00\u0000 😀' }, eventId: 'id-😀-世' },
        { type: '\u{10FFFF}', data: ['\uDBFF', '\u0000'] },
      ];
      await store.append(s, events, { expectedRevision: 'no_stream' });
      await store.compact(s, snapshotOf(s, 1, { lone: '\uD800', nul: '\u0000' }));
      const expected = async (current: typeof store) => {
        const read = await readStream(current, s);
        expect(read.snapshot?.state).toEqual({ lone: '\uD800', nul: '\u0000' });
        expect(read.events.map((e) => [e.type, e.data, e.eventId])).toEqual([['\u{10FFFF}', ['\uDBFF', '\u0000'], undefined]]);
      };
      await expected(store);
      const feed = await readFeed(store);
      expect(feed.map((e) => e.type)).toEqual(['\u{10FFFF}', '$snapshot']);
      if (ctx.caps.reopen) await expected(await reopen());
      // The id of the first event is forgotten with it; an append with an id keeps it exactly.
      const again = await ctx.fresh();
      await again.store.append(s, [events[0] as NewEvent], { expectedRevision: 'no_stream' });
      const read = await readStream(again.store, s);
      expect(read.events.map((e) => [e.type, e.data, e.eventId])).toEqual([['Said 😀 é世', { text: 'a\uD800b\uDC00\u0000 😀' }, 'id-😀-世']]);
      expect(await again.store.append(s, [events[0] as NewEvent], { expectedRevision: 'any' })).toEqual({ revision: 1, position: read.events[0]?.position });
    });

    it(`data and snapshot states nested ${MAX_JSON_DEPTH} levels deep are stored; deeper is InvalidInputError`, async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await store.append(s, [{ type: 'Deep', data: nested(MAX_JSON_DEPTH) }], { expectedRevision: 'no_stream' });
      expect((await readStream(store, s)).events[0]?.data).toEqual(nested(MAX_JSON_DEPTH));
      await expectInvalid(() => store.append(s, [{ type: 'Deeper', data: nested(MAX_JSON_DEPTH + 1) }], { expectedRevision: 1 }));
      await expectInvalid(() => store.compact(s, snapshotOf(s, 1, nested(MAX_JSON_DEPTH + 1))));
      await expectInvalid(() => store.restoreStream(streamId(), snapshotOf(s, 1, nested(10_000))));
      await store.compact(s, snapshotOf(s, 1, nested(MAX_JSON_DEPTH)));
      expect((await readStream(store, s)).snapshot?.state).toEqual(nested(MAX_JSON_DEPTH));
    });

    it.each(UNREADABLE_DATA)('data with %s is InvalidInputError and writes nothing', async (_label, make) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['Before']);
      const before = await observe(store, [s]);
      const error = await expectInvalid(() => store.append(s, [{ type: 'Bad', data: make() as JsonValue }], { expectedRevision: 1 }));
      expect(error.field).toBe('events[0].data');
      expect(await observe(store, [s])).toEqual(before);
    });

    it.each([
      ['a bigint member', { extra: 1n }],
      ['a cyclic member', { extra: cyclic() }],
      ['an unknown member', { extra: 1 }],
    ])('a snapshot with %s is InvalidInputError on compact and restoreStream, and writes nothing', async (_label, extra) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      const other = streamId();
      const before = await observe(store, [s, other]);
      await expectInvalid(() => store.compact(s, { ...snapshotOf(s, 1), ...extra } as Snapshot));
      await expectInvalid(() => store.compact(s, { ...snapshotOf(s, 1), identity: { stream: s, schemaVersion: 1, ...extra } } as Snapshot));
      await expectInvalid(() => store.restoreStream(other, { ...snapshotOf(other, 3), ...extra } as Snapshot));
      expect(await observe(store, [s, other])).toEqual(before);
    });

    it.each([
      ['a bigint', { big: 1n }],
      ['a cycle', cyclic()],
    ])('a snapshot state with %s is InvalidInputError on compact and restoreStream', async (_label, state) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A']);
      const other = streamId();
      const before = await observe(store, [s, other]);
      await expectInvalid(() => store.compact(s, snapshotOf(s, 1, state as unknown as JsonValue)));
      await expectInvalid(() => store.restoreStream(other, snapshotOf(other, 1, state as unknown as JsonValue)));
      expect(await observe(store, [s, other])).toEqual(before);
    });

    it('what a getter answers first is what is validated and stored: a reserved type never reaches the feed', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const type = shifting('type', ['Fine', '$snapshot'], { data: { n: 1 } });
      const eventId = shifting('eventId', ['first-id', 'second-id'], { type: 'WithId', data: null });
      const result = await store.append(s, [type.object as never, eventId.object as never], { expectedRevision: 'no_stream' });
      expect(type.reads()).toBe(1);
      expect(eventId.reads()).toBe(1);
      const feed = await readFeed(store);
      expect(feed.map((e) => [e.type, e.eventId])).toEqual([
        ['Fine', undefined],
        ['WithId', 'first-id'],
      ]);
      expect((await readStream(store, s)).events.map((e) => e.type)).toEqual(['Fine', 'WithId']);
      // The stored id is the one validated: a retry with it is recognised.
      expect(await store.append(s, [{ type: 'WithId', data: null, eventId: 'first-id' }], { expectedRevision: 'any' })).toEqual(result);
      expect(result.revision).toBe(2);

      let batchReads = 0;
      const batch: NewEvent[] = [];
      Object.defineProperty(batch, 0, {
        enumerable: true,
        configurable: true,
        get: () => (batchReads++ === 0 ? { type: 'Listed', data: 1 } : { type: '$deleted', data: 1 }),
      });
      await store.append(s, batch, { expectedRevision: 2 });
      expect(batchReads).toBe(1);
      expect((await readFeed(store)).map((e) => e.type)).toEqual(['Fine', 'WithId', 'Listed']);
    });

    it('expectedRevision, fromRevision, fromPosition and prefix are each read once', async () => {
      const { store } = await ctx.fresh();
      const s = streamId('read-once');
      await appendTypes(store, s, ['A', 'B', 'C']);
      const expected = shifting('expectedRevision', [3, 1]);
      expect((await store.append(s, [{ type: 'D', data: null }], expected.object as never)).revision).toBe(4);
      expect(expected.reads()).toBe(1);
      const stale = shifting('expectedRevision', [1, 4]);
      await expect(store.append(s, [{ type: 'E', data: null }], stale.object as never)).rejects.toMatchObject({ code: 'concurrency_conflict', expected: 1 });
      expect(stale.reads()).toBe(1);

      const fromRevision = shifting('fromRevision', [3, 1]);
      const read = await store.read(s, fromRevision.object as never);
      const revisions: number[] = [];
      for await (const event of read.events) revisions.push(event.revision);
      expect(revisions).toEqual([3, 4]);
      expect(fromRevision.reads()).toBe(1);

      const fromPosition = shifting('fromPosition', [4, 1]);
      const positions: number[] = [];
      const all = (await readFeed(store)).map((e) => e.position);
      for await (const event of store.readAll(fromPosition.object as never)) positions.push(event.position);
      expect(positions).toEqual(all.filter((p) => p >= 4));
      expect(fromPosition.reads()).toBe(1);

      await appendTypes(store, streamId('other'), ['A']);
      const prefix = shifting('prefix', ['read-once-', 'other-']);
      const listed: string[] = [];
      for await (const entry of store.streams(prefix.object as never)) listed.push(entry.stream);
      expect(listed).toEqual([s]);
      expect(prefix.reads()).toBe(1);

      const deleting = shifting('expectedRevision', [4, 1]);
      await store.deleteStream(s, deleting.object as never);
      expect(deleting.reads()).toBe(1);
      expect((await readStream(store, s)).revision).toBe(0);
    });

    it('a snapshot is read once: its revision, state and identity are what was validated', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B', 'C']);
      const revision = shifting('revision', [2, 99], { state: { at: 2 }, identity: { stream: s, schemaVersion: 1 } });
      await store.compact(s, revision.object as never);
      expect(revision.reads()).toBe(1);
      const identity = shifting(
        'identity',
        [
          { stream: s, schemaVersion: 1 },
          { stream: 'elsewhere', schemaVersion: -1 },
        ],
        { revision: 3, state: { at: 3 } },
      );
      await store.compact(s, identity.object as never);
      expect(identity.reads()).toBe(1);
      const read = await readStream(store, s);
      expect(read.snapshot).toEqual(snapshotOf(s, 3, { at: 3 }));
      const restored = streamId();
      const state = shifting('state', [{ ok: true }, { ok: 1n }], { revision: 5, identity: { stream: restored, schemaVersion: 2 } });
      expect((await store.restoreStream(restored, state.object as never)).revision).toBe(5);
      expect(state.reads()).toBe(1);
      expect((await readStream(store, restored)).snapshot).toEqual({ revision: 5, state: { ok: true }, identity: { stream: restored, schemaVersion: 2 } });
    });

    it('null options read like no options; options that are not objects, and a prefix that is not a string, are InvalidInputError', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      const read = await store.read(s, null as never);
      const events: unknown[] = [];
      for await (const event of read.events) events.push(event);
      expect({ ...read, events }).toEqual(await readStream(store, s));
      const feed: unknown[] = [];
      for await (const record of store.readAll(null as never)) feed.push(record);
      expect(feed).toEqual(await readFeed(store));
      const listed: unknown[] = [];
      for await (const entry of store.streams(null as never)) listed.push(entry);
      expect(listed).toEqual(await listStreams(store));

      await expectInvalid(() => store.read(s, 3 as never));
      await expectInvalid(async () => {
        for await (const _ of store.readAll('all' as never)) break;
      });
      await expectInvalid(async () => {
        for await (const _ of store.streams(7 as never)) break;
      });
      await expectInvalid(async () => {
        for await (const _ of store.streams({ prefix: 7 } as never)) break;
      });
      await expectInvalid(() => store.read(s, { fromRevision: Number.NaN }));
    });

    it('a stream id or sha256 that JSON cannot describe (a bigint, a cycle) is InvalidInputError', async () => {
      const { store } = await ctx.fresh();
      for (const bad of [1n, cyclic()]) {
        await expectInvalid(() => store.append(bad as never, [{ type: 'A', data: 1 }], { expectedRevision: 'any' }));
        await expectInvalid(() => store.read(bad as never));
        await expectInvalid(() => store.getBlob(bad as never));
      }
      expect(await readFeed(store)).toEqual([]);
    });

    it.for<[string, () => Date]>([
      ['an invalid Date', () => new Date(Number.NaN)],
      ['something that is not a Date', () => 1_700_000_000_000 as unknown as Date],
      [
        'a throw',
        (): Date => {
          throw new Error('no time');
        },
      ],
    ])(
      'a clock answering %s makes each write InvalidInputError (field clock), writes nothing, and the store goes on once it is fixed [capability: withClock]',
      async ([label, broken], t) => {
        skipWithout(t, ctx.caps.withClock === undefined, 'needs the withClock capability to open a store with a given clock');
        let clock: () => Date = () => new Date('2026-01-01T00:00:00.000Z');
        const open = ctx.caps.withClock as (clock: () => Date) => Promise<EventStore> | EventStore;
        const store = await open(() => clock());
        onTestFinished(() => store.close());
        const [s, gone, restored] = [streamId(), streamId(), streamId()];
        await appendTypes(store, s, ['A', 'B']);
        await appendTypes(store, gone, ['A']);
        const before = await observe(store, [s, gone, restored]);
        clock = broken;
        const writes: Array<[string, () => Promise<unknown>]> = [
          ['append', () => store.append(s, [{ type: 'C', data: null }], { expectedRevision: 2 })],
          ['compact', () => store.compact(s, snapshotOf(s, 1))],
          ['restoreStream', () => store.restoreStream(restored, snapshotOf(restored, 4))],
          ['deleteStream', () => store.deleteStream(gone, { expectedRevision: 1 })],
        ];
        for (const [method, write] of writes) {
          const error = await expectInvalid(write).catch((failure: unknown) => {
            throw new Error(`${method} with a clock answering ${label}: ${String(failure)}`, { cause: failure });
          });
          expect(error).toBeInstanceOf(InvalidInputError);
          expect(error.field).toBe('clock');
        }
        expect(await observe(store, [s, gone, restored])).toEqual(before);
        clock = () => new Date('2026-01-01T00:00:01.000Z');
        expect((await store.append(s, [{ type: 'C', data: null }], { expectedRevision: 2 })).revision).toBe(3);
        expect((await readStream(store, s)).events.at(-1)?.recordedAt).toBe('2026-01-01T00:00:01.000Z');
      },
    );

    it('a NaN expectedRevision is reported as NaN, not as null', async () => {
      const { store } = await ctx.fresh();
      const error = await expectInvalid(() => store.append(streamId(), [{ type: 'A', data: 1 }], { expectedRevision: Number.NaN }));
      expect(error.message).toContain('NaN');
      expect(error.message).not.toContain('null');
    });
  });
}
