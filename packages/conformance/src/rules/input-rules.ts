import { describe, expect, it } from 'vitest';
import type { EventStore, JsonValue, NewEvent } from '@sessionfold/core/kernel';
import { appendTypes, expectInvalid, listBlobs, observe, readFeed, readStream, snapshotOf, streamId, type SuiteContext } from '../support.js';

const BAD_STREAM_IDS: Array<[string, unknown]> = [
  ['empty', ''],
  ['a parent path', '../x'],
  ['a slash', 'a/b'],
  ['a backslash', 'a\\b'],
  ['a leading dot', '.hidden'],
  ['a leading dash', '-x'],
  ['129 characters', 'a'.repeat(129)],
  ['a space', 'a b'],
  ['a NUL byte', 'a\u0000b'],
  ['a non-ASCII letter', 'café'],
  ['a colon', 'c:x'],
  ['a number', 42],
  ['undefined', undefined],
];

/** Names Windows keeps for devices (any case, with or without an extension) and names ending in `.`. */
const RESERVED_NAMES = ['CON', 'con', 'Prn', 'AUX', 'nul', 'NUL.txt', 'aux.jsonl', 'COM1', 'com9.x.y', 'LPT1', 'lpt9', 'name.', 'x..'];

/** Calls every method that takes a stream id with `stream`. */
function everyStreamCall(store: EventStore, stream: string): Array<[string, () => Promise<unknown>]> {
  return [
    ['append', () => store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'any' })],
    ['read', () => readStream(store, stream)],
    ['compact', () => store.compact(stream, snapshotOf(stream, 1))],
    ['restoreStream', () => store.restoreStream(stream, snapshotOf(stream, 1))],
    ['deleteStream', () => store.deleteStream(stream, { expectedRevision: 'any' })],
    ['putBlob', () => store.putBlob(stream, new Uint8Array([1]))],
    ['blobs', () => listBlobs(store, stream)],
  ];
}

function cyclic(): JsonValue {
  const node: Record<string, unknown> = { name: 'loop' };
  node.self = node;
  return node as JsonValue;
}

const NON_JSON: Array<[string, () => unknown]> = [
  ['undefined', () => undefined],
  ['a nested undefined', () => ({ a: undefined })],
  ['NaN', () => Number.NaN],
  ['Infinity', () => ({ n: Number.POSITIVE_INFINITY })],
  ['a function', () => ({ f: () => 1 })],
  ['a Date', () => ({ at: new Date(0) })],
  ['a Map', () => new Map([['a', 1]])],
  [
    'a class instance',
    () => [
      new (class Point {
        x = 1;
      })(),
    ],
  ],
  ['a bigint', () => ({ big: 1n })],
  ['a symbol', () => Symbol('s')],
  ['a Uint8Array', () => ({ bytes: new Uint8Array([1]) })],
  ['a cycle', cyclic],
];

/** Bad input is `InvalidInputError` before anything is touched. */
export function describeInputRules(ctx: SuiteContext): void {
  describe('invalid input', () => {
    it.each(BAD_STREAM_IDS)('a stream id with %s is refused by every method and nothing is written', async (_label, bad) => {
      const { store } = await ctx.fresh();
      for (const [method, call] of everyStreamCall(store, bad as string)) {
        await expectInvalid(call).catch((error: unknown) => {
          throw new Error(`${method}(${JSON.stringify(bad)}): ${String(error)}`, { cause: error });
        });
      }
      expect(await readFeed(store)).toEqual([]);
    });

    it.each(RESERVED_NAMES)(
      'the Windows-reserved name %s is refused when a stream, a restore or a checkpoint would be created; reads and deletes take it',
      async (name) => {
        const { store } = await ctx.fresh();
        const refusal = await expectInvalid(() => store.append(name, [{ type: 'A', data: null }], { expectedRevision: 'any' }));
        expect(refusal.field).toBe('stream');
        expect(refusal.message).toContain('reserved');
        await expectInvalid(() => store.restoreStream(name, snapshotOf(name, 1)));
        if (store.checkpoints) {
          const slot = await expectInvalid(() => store.checkpoints!.save(name, 'state'));
          expect(slot.field).toBe('name');
          expect(await store.checkpoints.load(name)).toBeUndefined();
        }
        // A stream stored under such a name by an earlier release stays reachable: reads and deletes accept the id.
        expect((await readStream(store, name)).revision).toBe(0);
        await store.deleteStream(name, { expectedRevision: 'any' });
        expect(await readFeed(store)).toEqual([]);
      },
    );

    it('names that only resemble a reserved one are accepted', async () => {
      const { store } = await ctx.fresh();
      for (const s of ['CONX', 'com0', 'COM10', 'lpt', 'nul-1', 'auxiliary.jsonl', 'a.b', 'x_con']) {
        await store.append(s, [{ type: 'A', data: null }], { expectedRevision: 'no_stream' });
        expect((await readStream(store, s)).revision).toBe(1);
        if (store.checkpoints) await store.checkpoints.save(s, 'ok');
      }
    });

    it('stream ids of 1 and 128 characters with letters, digits, ".", "_" and "-" are accepted', async () => {
      const { store } = await ctx.fresh();
      const long = `L${streamId()}`.padEnd(128, 'x');
      for (const s of ['a', '7', long, `Z.${streamId()}_v-1`]) {
        await store.append(s, [{ type: 'A', data: null }], { expectedRevision: 'any' });
        expect((await readStream(store, s)).events.map((e) => e.streamId)).toContain(s);
      }
    });

    it.each(NON_JSON)('data containing %s is InvalidInputError and writes nothing', async (_label, make) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['Before']);
      const before = await observe(store, [s]);
      await expectInvalid(() => store.append(s, [{ type: 'Bad', data: make() as JsonValue }], { expectedRevision: 1 }));
      expect(await observe(store, [s])).toEqual(before);
    });

    it.each(['$snapshot', '$deleted', '$anything'])('the reserved type %s is InvalidInputError', async (type) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await expectInvalid(() => store.append(s, [{ type, data: null }], { expectedRevision: 'any' }));
      expect(await readFeed(store)).toEqual([]);
    });

    it('an event over maxEventBytes, counted in UTF-8 bytes of type + JSON data, is InvalidInputError; one at the limit is accepted', async () => {
      const { store } = await ctx.fresh();
      const limit = ctx.caps.maxEventBytes;
      const s = streamId();
      const type = 'Big';
      // JSON of a string adds its two quotes.
      const atLimit: NewEvent = { type, data: 'x'.repeat(limit - type.length - 2) };
      const overByOne: NewEvent = { type, data: 'x'.repeat(limit - type.length - 1) };
      const multiByte: NewEvent = { type, data: 'é'.repeat(Math.ceil((limit - type.length - 1) / 2)) };
      await expectInvalid(() => store.append(s, [{ type: 'Small', data: 1 }, overByOne], { expectedRevision: 'any' }));
      await expectInvalid(() => store.append(s, [multiByte], { expectedRevision: 'any' }));
      expect(await readFeed(store)).toEqual([]);
      expect((await store.append(s, [atLimit], { expectedRevision: 'no_stream' })).revision).toBe(1);
      expect((await readStream(store, s)).events[0]?.data).toBe(atLimit.data);
    });

    it.each([
      ['a negative expectedRevision', [{ type: 'A', data: 1 }], { expectedRevision: -1 }],
      ['a fractional expectedRevision', [{ type: 'A', data: 1 }], { expectedRevision: 1.5 }],
      ['an unknown expectedRevision', [{ type: 'A', data: 1 }], { expectedRevision: 'latest' }],
      ['no options', [{ type: 'A', data: 1 }], undefined],
      ['an empty batch', [], { expectedRevision: 'any' }],
      ['a batch that is not an array', { type: 'A', data: 1 }, { expectedRevision: 'any' }],
      ['an event without a type', [{ data: 1 }], { expectedRevision: 'any' }],
      ['an empty type', [{ type: '', data: 1 }], { expectedRevision: 'any' }],
      ['an event that is not an object', ['A'], { expectedRevision: 'any' }],
      ['an empty eventId', [{ type: 'A', data: 1, eventId: '' }], { expectedRevision: 'any' }],
      ['a numeric eventId', [{ type: 'A', data: 1, eventId: 7 }], { expectedRevision: 'any' }],
    ])('an append with %s is InvalidInputError', async (_label, events, options) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await expectInvalid(() => store.append(s, events as never, options as never));
      expect(await readFeed(store)).toEqual([]);
    });

    it.each([
      ['a negative expectedRevision', { expectedRevision: -1 }],
      ['an unknown expectedRevision', { expectedRevision: 'latest' }],
    ])('deleteStream with %s is InvalidInputError', async (_label, options) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A']);
      await expectInvalid(() => store.deleteStream(s, options as never));
      expect((await readStream(store, s)).revision).toBe(1);
    });
  });
}
