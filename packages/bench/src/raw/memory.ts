import { benchEvent, emptyRecord, foldData } from '../fixtures.js';
import type { JsonValue, NewEvent } from '@sessionfold/core';
import type { RawFamily, RawRead, RawWriter } from '../raw-limits.js';
import { RssTracker, timeSequential, type Timed } from '../stats.js';

/** The copy an in-memory store must make so callers cannot change what it holds: a JSON round trip. */
const copy = (event: NewEvent): JsonValue => JSON.parse(JSON.stringify(event.data)) as JsonValue;

/** Plain arrays in process memory: the least an in-memory store can do (copy in, push; iterate, copy out). */
export const rawMemory: RawFamily = {
  name: 'memory',
  describe: {
    appendBatches: 'JSON copy of each event + Array.push',
    appendSpread: 'JSON copy + Array.push into one array per stream',
    replay: 'iterate an array, JSON copy each event, fold',
    readAll: 'iterate the arrays, JSON copy each event, fold',
    compact: 'JSON copy + fold of the array, keep the record, empty the array',
    coldOpen: 'no cold open for memory (nothing survives)',
  },

  async appendBatches(_dir, batchSize): Promise<RawWriter> {
    const held: JsonValue[] = [];
    return {
      write(i) {
        for (let k = 0; k < batchSize; k++) held.push(copy(benchEvent(i * batchSize + k)));
      },
      close: async () => {},
    };
  },

  async appendSpread(_dir, streams): Promise<RawWriter> {
    const held: JsonValue[][] = Array.from({ length: streams }, () => []);
    return {
      async write(r) {
        await Promise.all(held.map(async (stream) => stream.push(copy(benchEvent(r)))));
      },
      close: async () => {},
    };
  },

  async replay(_dir, events) {
    const held = Array.from({ length: events }, (_, i) => copy(benchEvent(i)));
    return async (): Promise<RawRead> => {
      const rss = new RssTracker();
      const record = emptyRecord();
      const start = performance.now();
      held.forEach((data, i) => foldData(record, JSON.parse(JSON.stringify(data)) as JsonValue, i + 1));
      const ms = performance.now() - start;
      rss.sample();
      return { events, ms, rssGrowthMb: rss.growthMb };
    };
  },

  async readAll(dir, events) {
    return this.replay(dir, events);
  },

  async compact(_dir, events): Promise<Timed> {
    let held = Array.from({ length: events }, (_, i) => copy(benchEvent(i)));
    return timeSequential(1, () => {
      const record = emptyRecord();
      held.forEach((data, i) => foldData(record, JSON.parse(JSON.stringify(data)) as JsonValue, i + 1));
      held = [];
    });
  },

  async coldOpen(): Promise<Timed> {
    return { ops: 0, ms: Number.NaN, latencies: [] };
  },
};
