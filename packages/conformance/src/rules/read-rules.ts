import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '@sessionfold/core/kernel';
import { appendTypes, expectInvalid, readStream, snapshotOf, streamId, type SuiteContext } from '../support.js';

const revisions = (events: RecordedEvent[]) => events.map((e) => e.revision);

/** Reading one stream: fromRevision, the snapshot that covers it, missing streams, a consistent view. */
export function describeReadRules(ctx: SuiteContext): void {
  describe('read', () => {
    it('a missing stream reads as revision 0 with no snapshot and no events', async () => {
      const { store } = await ctx.fresh();
      const read = await readStream(store, streamId());
      expect(read).toEqual({ revision: 0, events: [] });
      expect(read.snapshot).toBeUndefined();
    });

    it('fromRevision starts the events at that revision', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B', 'C', 'D']);
      expect(revisions((await readStream(store, s, 1)).events)).toEqual([1, 2, 3, 4]);
      expect(revisions((await readStream(store, s, 3)).events)).toEqual([3, 4]);
      const atHead = await readStream(store, s, 4);
      expect(revisions(atHead.events)).toEqual([4]);
      expect(atHead.revision).toBe(4);
    });

    it('fromRevision past the head reads no events and the current revision', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      expect(await readStream(store, s, 3)).toEqual({ revision: 2, events: [] });
      expect(await readStream(store, s, 1000)).toEqual({ revision: 2, events: [] });
    });

    it('after compact, the snapshot comes back when it covers fromRevision, then the events after it', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B', 'C', 'D', 'E']);
      const snapshot = snapshotOf(s, 3, { folded: ['A', 'B', 'C'], balance: 0 });
      await store.compact(s, { ...snapshot, state: { folded: ['A', 'B', 'C'], balance: -0 } });
      for (const from of [undefined, 1, 2, 3]) {
        const read = await readStream(store, s, from);
        expect(read.snapshot, `fromRevision ${from}`).toEqual(snapshot);
        expect(revisions(read.events), `fromRevision ${from}`).toEqual([4, 5]);
        expect(read.revision).toBe(5);
      }
    });

    it('after compact, fromRevision past the snapshot reads events only', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B', 'C', 'D', 'E']);
      await store.compact(s, snapshotOf(s, 3));
      const read = await readStream(store, s, 4);
      expect(read.snapshot).toBeUndefined();
      expect(revisions(read.events)).toEqual([4, 5]);
      expect(revisions((await readStream(store, s, 5)).events)).toEqual([5]);
    });

    it('a read is a consistent view: events appended after it began are not in it', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      const read = await store.read(s);
      await appendTypes(store, s, ['C'], 2);
      const seen: number[] = [];
      for await (const event of read.events) seen.push(event.revision);
      expect(read.revision).toBe(2);
      expect(seen).toEqual([1, 2]);
    });

    it.each([0, -1, 1.5, Number.NaN, '2'])('fromRevision %j is InvalidInputError', async (from) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A']);
      await expectInvalid(() => readStream(store, s, from as number));
    });
  });
}
