import { describe, expect, it } from 'vitest';
import type { StreamReducer } from '../kernel/fold.js';
import { ConcurrencyError, memoryStore, type EventStore } from '../kernel/index.js';
import { SessionHistoryError } from './errors.js';
import { BackOff, StreamWriter } from './stream-writer.js';
import { interleavingStore } from './test-support.fixture.js';

type Counted = { type: 'Counted'; data: { n: number } };

/** A stream's state: the numbers appended to it, in order. */
const countReducer: StreamReducer<number[]> = {
  schemaVersion: 1,
  initial: () => [],
  apply: (state, event) => [...state, (event.data as { n: number }).n],
  toSnapshot: (state) => state,
  fromSnapshot: (state) => state as number[],
};

function writerOn(store: EventStore, random: () => number = () => 0): StreamWriter<number[], Counted> {
  return new StreamWriter<number[], Counted>({
    store,
    reducer: countReducer,
    evolve: (state, event) => [...state, event.data.n],
    now: () => new Date('2026-07-23T00:00:00.000Z'),
    backOff: new BackOff({ attempts: 5, baseDelayMs: 1, maxDelayMs: 4 }, random),
  });
}

/** Appends the length of the state it was decided on: gaps or repeats show a decision made on a stale state. */
const next = (state: number[]): Counted[] => [{ type: 'Counted', data: { n: state.length + 1 } }];

const upTo = (count: number, from = 1) => Array.from({ length: count }, (_, index) => index + from);

describe('StreamWriter', () => {
  it('runs concurrent writes of one stream one at a time, each decided on the state the previous one left', async () => {
    const writer = writerOn(memoryStore());
    const results = await Promise.all(Array.from({ length: 50 }, () => writer.mutate('s', next)));
    expect(results.map((result) => result.revision)).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
    expect((await writer.load('s')).state).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
  });

  it('a refused decision rejects only its own call', async () => {
    const writer = writerOn(memoryStore());
    const refuse = () => SessionHistoryError.conflict('no');
    const outcomes = await Promise.allSettled([writer.mutate('s', next), writer.mutate('s', refuse), writer.mutate('s', next)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await writer.load('s')).state).toEqual([1, 2]);
  });

  it('decides again after another writer’s append, waiting a draw of the injected source times a growing bound', async () => {
    const inner = memoryStore();
    const other = writerOn(inner);
    // The first loss costs no wait (the state was not read, only remembered); each loss after a read does.
    let conflicts = 3;
    const store: EventStore = {
      ...inner,
      append: async (stream, events, options) => {
        // Another process gets in first, twice.
        if (conflicts-- > 0) await other.mutate(stream, next);
        return inner.append(stream, events, options);
      },
    };
    const draws: number[] = [];
    const writer = writerOn(store, () => {
      draws.push(0.25);
      return 0.25;
    });
    const result = await writer.mutate('s', next);
    expect(result.state).toEqual([1, 2, 3, 4]);
    expect(draws).toHaveLength(2);
  });

  it('gives up with state_conflict after its attempts, and refuses a random source out of range', async () => {
    const inner = memoryStore();
    const store: EventStore = { ...inner, append: async (stream) => Promise.reject(new ConcurrencyError(stream, 1, 2)) };
    await expect(writerOn(store).mutate('s', next)).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Session changed concurrently too many times; try again.',
    });
    await expect(writerOn(store, () => 1).mutate('s', next)).rejects.toThrow(TypeError);
  });

  it('decides the decisions queued on one stream one after another and appends them as one batch, in call order', async () => {
    const counting = interleavingStore(memoryStore());
    const writer = writerOn(counting.store);
    await writer.mutate('s', next);
    const before = counting.appends();
    const results = await Promise.all(Array.from({ length: 50 }, () => writer.mutate('s', next)));
    expect(counting.appends() - before).toBeLessThanOrEqual(2);
    // Each call gets its own result: the state and revision right after its own event.
    expect(results.map((result) => result.revision)).toEqual(upTo(50, 2));
    expect(results.map((result) => result.state)).toEqual(upTo(50, 2).map((count) => upTo(count)));
    expect(results.map((result) => result.events)).toEqual(upTo(50, 2).map((n) => [{ type: 'Counted', data: { n } }]));
    expect((await writer.load('s')).state).toEqual(upTo(51));
  });

  it('a refusal or a no-op inside a batch settles only its own call and adds no events', async () => {
    const counting = interleavingStore(memoryStore());
    const writer = writerOn(counting.store);
    const refuse = () => SessionHistoryError.conflict('no');
    const throwing = () => {
      throw new TypeError('a bug in one decision');
    };
    const outcomes = await Promise.allSettled([
      writer.mutate('s', next),
      writer.mutate('s', refuse),
      writer.mutate('s', next),
      writer.mutate('s', () => []),
      writer.mutate('s', throwing),
      writer.mutate('s', next),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(outcomes[1]).toMatchObject({ reason: { code: 'state_conflict', message: 'no' } });
    expect(outcomes[4]).toMatchObject({ reason: { message: 'a bug in one decision' } });
    expect(outcomes[3]).toMatchObject({ value: { state: [1, 2], revision: 2, events: [] } });
    expect(counting.appends()).toBe(1);
    expect((await writer.load('s')).state).toEqual([1, 2, 3]);
  });

  it('decides every decision of a batch again when another writer appended first', async () => {
    const counting = interleavingStore(memoryStore());
    const other = writerOn(counting.store);
    const writer = writerOn(counting.store);
    await writer.mutate('s', next);
    counting.beforeNextAppend(() => other.mutate('s', next));
    const results = await Promise.all(Array.from({ length: 10 }, () => writer.mutate('s', next)));
    expect(results.map((result) => result.revision)).toEqual(upTo(10, 3));
    expect(results.map((result) => result.state.at(-1))).toEqual(upTo(10, 3));
    expect((await writer.load('s')).state).toEqual(upTo(12));
  });

  it('appends a decision carrying an event id on its own, so a retry of an earlier append stays a no-op among others', async () => {
    const writer = writerOn(memoryStore());
    await writer.mutate('s', next, 'first');
    const outcomes = await Promise.allSettled([
      writer.mutate('s', next),
      writer.mutate('s', next, 'first'),
      writer.mutate('s', next, 'second'),
      writer.mutate('s', next),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(outcomes[1]).toMatchObject({ value: { revision: 1 } });
    expect((await writer.load('s')).state).toEqual([1, 2, 3, 4]);
  });

  it('an event the store refuses fails only the call that decided it', async () => {
    const writer = writerOn(memoryStore({ maxEventBytes: 200 }));
    const oversize = (state: number[]): Counted[] => [{ type: 'Counted', data: { n: state.length + 1, padding: 'x'.repeat(500) } as { n: number } }];
    const outcomes = await Promise.allSettled([writer.mutate('s', next), writer.mutate('s', oversize), writer.mutate('s', next)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(outcomes[1]).toMatchObject({ reason: { code: 'invalid_input' } });
    expect((await writer.load('s')).state).toEqual([1, 2]);
  });

  it('decides on the state it holds without reading the stream; reads it only to confirm a refusal or a no-op', async () => {
    const counting = interleavingStore(memoryStore());
    const writer = writerOn(counting.store);
    for (let count = 0; count < 3; count++) await writer.mutate('s', next);
    expect(counting.reads()).toBe(0);
    await expect(writer.mutate('s', () => SessionHistoryError.conflict('no'))).rejects.toMatchObject({ message: 'no' });
    expect(counting.reads()).toBe(1);
    await expect(writer.mutate('s', () => [])).resolves.toMatchObject({ state: [1, 2, 3], revision: 3 });
    expect(counting.reads()).toBe(2);
  });

  it('decides again, at once, on the stored state when another writer moved the stream past the state it held', async () => {
    const store = memoryStore();
    let draws = 0;
    const writer = writerOn(store, () => {
      draws++;
      return 0;
    });
    const other = writerOn(store);
    await writer.mutate('s', next);
    await other.mutate('s', next);
    const refusedOnStale = (state: number[]) => (state.length < 2 ? SessionHistoryError.conflict('stale') : next(state));
    await expect(writer.mutate('s', refusedOnStale)).resolves.toMatchObject({ state: [1, 2, 3], revision: 3 });
    await other.mutate('s', next);
    await expect(writer.mutate('s', next)).resolves.toMatchObject({ state: [1, 2, 3, 4, 5], revision: 5 });
    // Neither was a race lost on a state just read: no back-off.
    expect(draws).toBe(0);
  });
});
