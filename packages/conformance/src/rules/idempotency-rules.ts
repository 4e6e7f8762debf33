import { describe, expect, it } from 'vitest';
import type { NewEvent } from '@sessionfold/core/kernel';
import { skipWithout, expectInvalid, observe, readStream, snapshotOf, streamId, type SuiteContext } from '../support.js';

const batch = (...ids: string[]): NewEvent[] => ids.map((eventId, n) => ({ type: 'Requested', data: { n }, eventId }));

/** Event ids: a retried batch returns its first result; ids are per stream and forgotten with their events. */
export function describeIdempotencyRules(ctx: SuiteContext): void {
  describe('idempotent append by eventId', () => {
    it('retrying a batch returns the original result and writes nothing, even with its stale expected revision', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const original = await store.append(s, batch('r1', 'r2'), { expectedRevision: 'no_stream' });
      await store.append(s, [{ type: 'Other', data: null }], { expectedRevision: 2 });
      const before = await observe(store, [s]);
      expect(await store.append(s, batch('r1', 'r2'), { expectedRevision: 'no_stream' })).toEqual(original);
      expect(await store.append(s, batch('r1', 'r2'), { expectedRevision: 'any' })).toEqual(original);
      expect(await observe(store, [s])).toEqual(before);
    });

    it('a batch whose first eventId is known writes nothing, even when the rest is new', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const original = await store.append(s, batch('r1'), { expectedRevision: 'no_stream' });
      const before = await observe(store, [s]);
      expect(await store.append(s, batch('r1', 'fresh'), { expectedRevision: 1 })).toEqual(original);
      expect(await observe(store, [s])).toEqual(before);
    });

    it("a retry of a later event of a batch returns that batch's result", async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const original = await store.append(s, batch('r1', 'r2', 'r3'), { expectedRevision: 'no_stream' });
      expect(await store.append(s, batch('r2'), { expectedRevision: 'any' })).toEqual(original);
      expect((await readStream(store, s)).revision).toBe(3);
    });

    it('an eventId the stream already has, later in a batch, is InvalidInputError and writes nothing', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await store.append(s, batch('r1'), { expectedRevision: 'no_stream' });
      const before = await observe(store, [s]);
      await expectInvalid(() => store.append(s, batch('new', 'r1'), { expectedRevision: 1 }));
      expect(await observe(store, [s])).toEqual(before);
    });

    it('the same eventId twice in one batch is InvalidInputError and writes nothing', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await expectInvalid(() => store.append(s, batch('twice', 'other', 'twice'), { expectedRevision: 'no_stream' }));
      expect(await observe(store, [s])).toEqual({ reads: [{ stream: s, read: { revision: 0, events: [] }, blobs: [] }], feed: [], listed: [] });
    });

    it('eventIds are per stream: another stream may use the same id', async () => {
      const { store } = await ctx.fresh();
      const [s, t] = [streamId(), streamId()];
      const first = await store.append(s, batch('shared'), { expectedRevision: 'no_stream' });
      const second = await store.append(t, batch('shared'), { expectedRevision: 'no_stream' });
      expect(second.position).toBeGreaterThan(first.position);
      expect((await readStream(store, t)).events.map((e) => e.eventId)).toEqual(['shared']);
    });

    it('eventIds of compacted events are forgotten; those after the snapshot are kept', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await store.append(s, batch('old'), { expectedRevision: 'no_stream' });
      const kept = await store.append(s, batch('kept'), { expectedRevision: 1 });
      await store.compact(s, snapshotOf(s, 1));
      expect(await store.append(s, batch('kept'), { expectedRevision: 'any' })).toEqual(kept);
      const again = await store.append(s, batch('old'), { expectedRevision: 2 });
      expect(again.revision).toBe(3);
      expect((await readStream(store, s)).events.map((e) => [e.revision, e.eventId])).toEqual([
        [2, 'kept'],
        [3, 'old'],
      ]);
    });

    it('eventIds of a deleted stream are forgotten', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await store.append(s, batch('id'), { expectedRevision: 'no_stream' });
      await store.deleteStream(s, { expectedRevision: 1 });
      const again = await store.append(s, batch('id'), { expectedRevision: 'no_stream' });
      expect(again.revision).toBe(1);
      expect((await readStream(store, s)).events).toHaveLength(1);
    });

    it('a retry after a reopen returns the original result [capability: reopen]', async (t) => {
      skipWithout(t, !ctx.caps.reopen, 'needs capabilities.reopen');
      const harness = await ctx.fresh();
      const s = streamId();
      const original = await harness.store.append(s, batch('r1', 'r2'), { expectedRevision: 'no_stream' });
      const later = await harness.store.append(s, batch('r3'), { expectedRevision: 2 });
      const store = await harness.reopen();
      expect(await store.append(s, batch('r1', 'r2'), { expectedRevision: 'no_stream' })).toEqual(original);
      expect(await store.append(s, batch('r2'), { expectedRevision: 'no_stream' })).toEqual(original);
      expect(await store.append(s, batch('r3'), { expectedRevision: 2 })).toEqual(later);
      expect((await readStream(store, s)).revision).toBe(3);
    });

    it('concurrent retries of one batch write it once [capability: concurrentAppends]', async (t) => {
      skipWithout(t, !ctx.caps.concurrentAppends, 'needs capabilities.concurrentAppends');
      const { store } = await ctx.fresh();
      const s = streamId();
      const results = await Promise.all(Array.from({ length: 5 }, () => store.append(s, batch('once-a', 'once-b'), { expectedRevision: 'no_stream' })));
      for (const result of results) expect(result).toEqual(results[0]);
      expect(results[0]!.revision).toBe(2);
      expect((await readStream(store, s)).events.map((e) => e.eventId)).toEqual(['once-a', 'once-b']);
    });
  });
}
