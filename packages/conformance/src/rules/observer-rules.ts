import { describe, expect, it, onTestFinished } from 'vitest';
import type { EventStore, NewEvent, StoreObserver } from '@sessionfold/core/kernel';
import { appendTypes, readStream, skipWithout, snapshotOf, streamId, type SuiteContext } from '../support.js';

type Calls = { [K in keyof Required<StoreObserver>]: Array<Parameters<Required<StoreObserver>[K]>[0]> };

/** An observer that records every call, by hook. */
function recordingObserver(): { observer: Required<StoreObserver>; calls: Calls } {
  const calls: Calls = { appendCommitted: [], flushed: [], compacted: [], corruptionFound: [], followInterrupted: [], followResumed: [] };
  return {
    calls,
    observer: {
      appendCommitted: (value) => void calls.appendCommitted.push(value),
      flushed: (value) => void calls.flushed.push(value),
      compacted: (value) => void calls.compacted.push(value),
      corruptionFound: (value) => void calls.corruptionFound.push(value),
      followInterrupted: (value) => void calls.followInterrupted.push(value),
      followResumed: (value) => void calls.followResumed.push(value),
    },
  };
}

/** The UTF-8 bytes of an event's type and serialized data: the least an append's `bytes` can count. */
const leastBytes = (events: NewEvent[]) => events.reduce((sum, e) => sum + Buffer.byteLength(e.type) + Buffer.byteLength(JSON.stringify(e.data)), 0);

const sum = <T>(items: T[], of: (item: T) => number) => items.reduce((total, item) => total + of(item), 0);

/** The `observer` option: each hook told of what happened, with plausible sizes and times; an observer never breaks a call. */
export function describeObserverRules(ctx: SuiteContext): void {
  describe('observer', () => {
    const open = async (observer: StoreObserver): Promise<EventStore> => {
      const store = await (ctx.caps.withObserver as (observer: StoreObserver) => EventStore | Promise<EventStore>)(observer);
      onTestFinished(() => store.close());
      return store;
    };

    it('tells of each committed append, and the group commits add up to them [capability: withObserver]', async (t) => {
      skipWithout(t, ctx.caps.withObserver === undefined, 'needs capabilities.withObserver');
      const { observer, calls } = recordingObserver();
      const store = await open(observer);
      const [a, b, c] = [streamId('a'), streamId('b'), streamId('c')];
      const first: NewEvent[] = [
        { type: 'Noted', data: { text: 'héllo' } },
        { type: 'Noted', data: 2 },
      ];
      const second: NewEvent[] = [{ type: 'Other', data: ['x'] }];
      // Issued in one turn, so a store with group commit shares a commit among them; the conflict writes nothing.
      const settled = await Promise.allSettled([
        store.append(a, first, { expectedRevision: 'no_stream' }),
        store.append(b, second, { expectedRevision: 'no_stream' }),
        store.append(c, second, { expectedRevision: 5 }),
      ]);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      await appendTypes(store, a, ['Later'], 2);
      const appends = [...calls.appendCommitted].sort((x, y) => x.stream.localeCompare(y.stream) || x.events - y.events);
      expect(appends.map(({ stream, events }) => ({ stream, events }))).toEqual([
        { stream: a, events: 1 },
        { stream: a, events: 2 },
        { stream: b, events: 1 },
      ]);
      const least = new Map([
        [`${a}:2`, leastBytes(first)],
        [`${a}:1`, leastBytes([{ type: 'Later', data: { n: 0 } }])],
        [`${b}:1`, leastBytes(second)],
      ]);
      for (const append of appends) {
        expect(append.bytes).toBeGreaterThanOrEqual(least.get(`${append.stream}:${append.events}`) as number);
        expect(append.durationMs).toBeGreaterThanOrEqual(0);
      }
      expect(sum(calls.flushed, (f) => f.appends)).toBe(3);
      expect(sum(calls.flushed, (f) => f.events)).toBe(4);
      expect(sum(calls.flushed, (f) => f.bytes)).toBe(sum(appends, (x) => x.bytes));
      for (const flush of calls.flushed) {
        expect(flush.appends).toBeGreaterThanOrEqual(1);
        expect(flush.syncMs).toBeGreaterThanOrEqual(0);
      }
      expect(calls.corruptionFound).toEqual([]);
    });

    it('tells of each compaction with the events it dropped [capability: withObserver]', async (t) => {
      skipWithout(t, ctx.caps.withObserver === undefined, 'needs capabilities.withObserver');
      const { observer, calls } = recordingObserver();
      const store = await open(observer);
      const s = streamId();
      await appendTypes(store, s, ['A', 'B', 'C', 'D'], 'no_stream');
      await store.compact(s, snapshotOf(s, 3));
      await store.compact(s, snapshotOf(s, 4));
      expect(calls.compacted.map(({ stream, revision, droppedEvents }) => ({ stream, revision, droppedEvents }))).toEqual([
        { stream: s, revision: 3, droppedEvents: 3 },
        { stream: s, revision: 4, droppedEvents: 1 },
      ]);
      for (const compaction of calls.compacted) expect(compaction.durationMs).toBeGreaterThanOrEqual(0);
    });

    it('an observer whose hooks throw or reject breaks no call [capability: withObserver]', async (t) => {
      skipWithout(t, ctx.caps.withObserver === undefined, 'needs capabilities.withObserver');
      const boom = () => {
        throw new Error('observer failed');
      };
      const reject = () => Promise.reject(new Error('observer failed later')) as never;
      const store = await open({ appendCommitted: boom, flushed: reject, compacted: boom, corruptionFound: reject });
      const s = streamId();
      expect((await appendTypes(store, s, ['A', 'B'], 'no_stream')).revision).toBe(2);
      await store.compact(s, snapshotOf(s, 2));
      await appendTypes(store, s, ['C'], 2);
      const read = await readStream(store, s);
      expect(read.revision).toBe(3);
      expect(read.events.map((e) => e.type)).toEqual(['C']);
    });
  });
}
