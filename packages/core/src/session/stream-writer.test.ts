import { describe, expect, it } from 'vitest';
import type { StreamReducer } from '../kernel/fold.js';
import { ConcurrencyError, memoryStore, type EventStore } from '../kernel/index.js';
import { SessionHistoryError } from './errors.js';
import { BackOff, StreamWriter } from './stream-writer.js';

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
    let conflicts = 2;
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
    expect(result.state).toEqual([1, 2, 3]);
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
});
