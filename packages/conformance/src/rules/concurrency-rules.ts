import { describe, expect, it } from 'vitest';
import { ConcurrencyError, DELETED_RECORD, SNAPSHOT_RECORD } from '@sessionfold/core/kernel';
import { FeedConsumer, viewsFromReads } from '../feed-consumer.js';
import { skipWithout, appendTypes, readFeed, readStream, snapshotOf, streamId, type SuiteContext } from '../support.js';

const settle = <T>(promises: Array<Promise<T>>) => Promise.allSettled(promises);

/** Calls in flight together on one store keep every rule (group commit must not bend them). */
export function describeConcurrencyRules(ctx: SuiteContext): void {
  describe('appends in flight together', () => {
    it('expecting the same revision: exactly one wins, the others get ConcurrencyError with the new revision [capability: concurrentAppends]', async (t) => {
      skipWithout(t, !ctx.caps.concurrentAppends, 'needs capabilities.concurrentAppends');
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['Start']);
      const outcomes = await settle(Array.from({ length: 8 }, (_, i) => appendTypes(store, s, [`Racer${i}`, `Racer${i}-b`], 1)));
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      const lost = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
      expect(won).toHaveLength(1);
      expect(won[0]!.value.revision).toBe(3);
      for (const error of lost) {
        expect(error).toBeInstanceOf(ConcurrencyError);
        expect(error).toMatchObject({ code: 'concurrency_conflict', stream: s, expected: 1, actual: 3 });
      }
      const { events } = await readStream(store, s);
      expect(events.map((e) => e.revision)).toEqual([1, 2, 3]);
      expect(events[1]!.type.replace(/-b$/, '')).toBe(events[2]!.type.replace(/-b$/, ''));
    });

    it("expecting 'any': every batch commits whole, with distinct gap-free revisions [capability: concurrentAppends]", async (t) => {
      skipWithout(t, !ctx.caps.concurrentAppends, 'needs capabilities.concurrentAppends');
      const { store } = await ctx.fresh();
      const s = streamId();
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => appendTypes(store, s, [`B${i}-1`, `B${i}-2`])));
      expect(results.map((r) => r.revision).sort((x, y) => x - y)).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18, 20]);
      const { events } = await readStream(store, s);
      expect(events.map((e) => e.revision)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      for (let i = 0; i < events.length; i += 2) {
        expect(events[i]!.type.replace(/-1$/, '-2')).toBe(events[i + 1]!.type);
        const result = results.find((r) => r.revision === events[i + 1]!.revision);
        expect(result?.position).toBe(events[i + 1]!.position);
      }
    });

    it('appends to different streams all commit, with distinct increasing positions [capability: concurrentAppends]', async (t) => {
      skipWithout(t, !ctx.caps.concurrentAppends, 'needs capabilities.concurrentAppends');
      const { store } = await ctx.fresh();
      const streams = Array.from({ length: 8 }, () => streamId());
      const results = await Promise.all(streams.map((s) => appendTypes(store, s, ['A', 'B'], 'no_stream')));
      expect(results.map((r) => r.revision)).toEqual(streams.map(() => 2));
      expect(new Set(results.map((r) => r.position)).size).toBe(streams.length);
      const feed = await readFeed(store);
      expect(feed).toHaveLength(16);
      for (let i = 1; i < feed.length; i++) expect(feed[i]!.position).toBeGreaterThan(feed[i - 1]!.position);
      for (const s of streams) {
        const mine = feed.filter((r) => r.streamId === s);
        expect(mine.map((r) => r.revision)).toEqual([1, 2]);
        expect(mine[1]!.position).toBe(results[streams.indexOf(s)]!.position);
      }
    });

    it('a consumer reading the feed while appends are in flight never misses one [capability: concurrentAppends]', async (t) => {
      skipWithout(t, !ctx.caps.concurrentAppends, 'needs capabilities.concurrentAppends');
      const { store } = await ctx.fresh();
      const streams = Array.from({ length: 6 }, () => streamId());
      const consumer = new FeedConsumer();
      let writing = true;
      const reader = (async () => {
        while (writing) {
          await consumer.catchUp(store);
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      try {
        for (let round = 0; round < 6; round++) {
          await Promise.all(
            streams.map((s, i) =>
              appendTypes(
                store,
                s,
                Array.from({ length: 1 + ((i + round) % 3) }, (_, n) => `R${round}-${n}`),
              ),
            ),
          );
          if (round === 3) await store.compact(streams[0]!, snapshotOf(streams[0]!, 2));
        }
      } finally {
        writing = false;
        await reader;
      }
      await consumer.catchUp(store);
      expect(consumer.views()).toEqual(await viewsFromReads(store));
    });

    it('reads while a compaction runs see the stream before it or after it, never a mix', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      for (let batch = 0; batch < 10; batch++) {
        await store.append(
          s,
          Array.from({ length: 10 }, (_, n) => ({ type: 'Counted', data: { n: batch * 10 + n + 1 } })),
          { expectedRevision: batch * 10 },
        );
      }
      await store.compact(s, snapshotOf(s, 30));
      const shape = (read: Awaited<ReturnType<typeof readStream>>) =>
        `revision ${read.revision}, snapshot ${read.snapshot?.revision ?? '-'}, events ${read.events.map((e) => e.revision).join(',')}`;
      const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i).join(',');
      const before = `revision 100, snapshot 30, events ${range(31, 100)}`;
      const after = `revision 100, snapshot 60, events ${range(61, 100)}`;
      const feedShape = (records: Awaited<ReturnType<typeof readFeed>>) =>
        records
          .filter((r) => r.streamId === s)
          .map((r) => (r.type === SNAPSHOT_RECORD ? `$${r.revision}` : `${r.revision}`))
          .join(',');
      const feedBefore = `${range(31, 100)},$30`;
      const feedAfter = `${range(61, 100)},$60`;
      let done = false;
      const compaction = store.compact(s, snapshotOf(s, 60)).finally(() => (done = true));
      const seen: string[] = [];
      const feeds: string[] = [];
      while (!done) {
        const [read, feed] = await Promise.all([readStream(store, s), readFeed(store)]);
        seen.push(shape(read));
        feeds.push(feedShape(feed));
        for (const event of read.events) expect(event.data).toEqual({ n: event.revision });
        await new Promise((resolve) => setImmediate(resolve));
      }
      await compaction;
      seen.push(shape(await readStream(store, s)));
      feeds.push(feedShape(await readFeed(store)));
      expect(seen.filter((x) => x !== before && x !== after)).toEqual([]);
      expect(feeds.filter((x) => x !== feedBefore && x !== feedAfter)).toEqual([]);
      expect(seen.at(-1)).toBe(after);
      expect(feeds.at(-1)).toBe(feedAfter);
    });

    it('reads while a stream is deleted see it whole or gone, never part of it', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await store.append(
        s,
        Array.from({ length: 40 }, (_, n) => ({ type: 'Counted', data: { n: n + 1 } })),
        { expectedRevision: 'no_stream' },
      );
      await store.compact(s, snapshotOf(s, 10));
      const whole = `revision 40, snapshot 10, events ${Array.from({ length: 30 }, (_, i) => i + 11).join(',')}`;
      const gone = 'revision 0, snapshot -, events ';
      let done = false;
      const deletion = store.deleteStream(s, { expectedRevision: 40 }).finally(() => (done = true));
      const seen = new Set<string>();
      const feeds = new Set<string>();
      do {
        const [read, feed] = await Promise.all([readStream(store, s), readFeed(store)]);
        seen.add(`revision ${read.revision}, snapshot ${read.snapshot?.revision ?? '-'}, events ${read.events.map((e) => e.revision).join(',')}`);
        feeds.add(
          feed
            .map((r) => r.type)
            .join(',')
            .replace(/(Counted,)+Counted/, 'Counted…'),
        );
        await new Promise((resolve) => setImmediate(resolve));
      } while (!done);
      await deletion;
      expect([...seen].filter((x) => x !== whole && x !== gone)).toEqual([]);
      expect([...feeds].filter((x) => x !== `Counted…,${SNAPSHOT_RECORD}` && x !== DELETED_RECORD)).toEqual([]);
      expect(await readStream(store, s)).toEqual({ revision: 0, events: [] });
    });

    it('compacting a stream while appends to it are in flight loses nothing [capability: concurrentAppends]', async (t) => {
      skipWithout(t, !ctx.caps.concurrentAppends, 'needs capabilities.concurrentAppends');
      const harness = await ctx.fresh();
      const s = streamId();
      await appendTypes(harness.store, s, ['A', 'B', 'C', 'D']);
      const consumer = new FeedConsumer();
      await consumer.catchUp(harness.store);
      const appends = Array.from({ length: 10 }, (_, i) => appendTypes(harness.store, s, [`X${i}`]));
      const compaction = harness.store.compact(s, snapshotOf(s, 3));
      await Promise.all([...appends, compaction]);
      const check = async () => {
        const read = await readStream(harness.store, s);
        expect(read.revision).toBe(14);
        expect(read.snapshot).toEqual(snapshotOf(s, 3));
        expect(read.events.map((e) => e.revision)).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
        expect(read.events.map((e) => e.type).sort()).toEqual(['D', ...Array.from({ length: 10 }, (_, i) => `X${i}`)].sort());
        await consumer.catchUp(harness.store);
        expect(consumer.views()).toEqual(await viewsFromReads(harness.store));
      };
      await check();
      if (ctx.caps.reopen) {
        await harness.reopen();
        await check();
      }
    });
  });
}
