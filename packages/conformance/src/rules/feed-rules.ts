import { describe, expect, it } from 'vitest';
import { DELETED_RECORD, SNAPSHOT_RECORD, type EventStore, type RecordedEvent } from '@sessionfold/core/kernel';
import { FeedConsumer, viewsFromReads } from '../feed-consumer.js';
import { appendTypes, expectInvalid, readFeed, snapshotOf, streamId, type SuiteContext } from '../support.js';

const summary = (records: RecordedEvent[]) => records.map((r) => `${r.streamId}:${r.type}@${r.revision}`);

/** The change feed: commit order, fromPosition, `$snapshot`/`$deleted` records, consumers that converge. */
export function describeFeedRules(ctx: SuiteContext): void {
  describe('readAll', () => {
    it('lists every event of every stream in commit order', async () => {
      const { store } = await ctx.fresh();
      const [a, b] = [streamId('a'), streamId('b')];
      expect(await readFeed(store)).toEqual([]);
      await appendTypes(store, a, ['A1']);
      await appendTypes(store, b, ['B1', 'B2']);
      await appendTypes(store, a, ['A2']);
      expect(summary(await readFeed(store))).toEqual([`${a}:A1@1`, `${b}:B1@1`, `${b}:B2@2`, `${a}:A2@2`]);
    });

    it('fromPosition is inclusive, and a position inside a gap starts at the next record', async () => {
      const { store } = await ctx.fresh();
      const [a, b] = [streamId('a'), streamId('b')];
      await appendTypes(store, b, ['B1']);
      await appendTypes(store, a, ['A1', 'A2']);
      await appendTypes(store, b, ['B2']);
      await store.compact(a, snapshotOf(a, 2));
      const feed = await readFeed(store);
      expect(summary(feed)).toEqual([`${b}:B1@1`, `${b}:B2@2`, `${a}:${SNAPSHOT_RECORD}@2`]);
      for (const [index, record] of feed.entries()) {
        expect(await readFeed(store, record.position)).toEqual(feed.slice(index));
      }
      const inGap = feed[0]!.position + 1;
      expect(inGap).toBeLessThan(feed[1]!.position);
      expect(await readFeed(store, inGap)).toEqual(feed.slice(1));
      expect(await readFeed(store, 1)).toEqual(feed);
    });

    it('fromPosition past the end reads nothing, and the next commit appears there', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const { position } = await appendTypes(store, s, ['A']);
      expect(await readFeed(store, position + 1)).toEqual([]);
      await appendTypes(store, s, ['B']);
      expect(summary(await readFeed(store, position + 1))).toEqual([`${s}:B@2`]);
    });

    it('compact adds a $snapshot record carrying the snapshot and drops the events it covers', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const { position } = await appendTypes(store, s, ['A', 'B', 'C']);
      const snapshot = snapshotOf(s, 2, { seen: ['A', 'B'] });
      await store.compact(s, snapshot);
      const feed = await readFeed(store);
      expect(summary(feed)).toEqual([`${s}:C@3`, `${s}:${SNAPSHOT_RECORD}@2`]);
      const record = feed[1]!;
      expect(record.data).toEqual(snapshot);
      expect(record.position).toBeGreaterThan(position);
      expect(record.eventId).toBeUndefined();
      await store.compact(s, snapshotOf(s, 3));
      expect(summary(await readFeed(store))).toEqual([`${s}:${SNAPSHOT_RECORD}@3`]);
    });

    it('restoreStream adds a $snapshot record at the position it returns', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const snapshot = snapshotOf(s, 7);
      const result = await store.restoreStream(s, snapshot);
      const feed = await readFeed(store);
      expect(feed).toHaveLength(1);
      expect(feed[0]).toMatchObject({ streamId: s, type: SNAPSHOT_RECORD, revision: 7, data: snapshot, position: result.position });
    });

    it("deleteStream drops the stream's records and adds a $deleted record", async () => {
      const { store } = await ctx.fresh();
      const [s, other] = [streamId('s'), streamId('other')];
      await appendTypes(store, s, ['A', 'B']);
      await appendTypes(store, other, ['O']);
      await store.compact(s, snapshotOf(s, 1));
      const before = await readFeed(store);
      await store.deleteStream(s, { expectedRevision: 2 });
      const feed = await readFeed(store);
      expect(summary(feed)).toEqual([`${other}:O@1`, `${s}:${DELETED_RECORD}@2`]);
      expect(feed[1]!.position).toBeGreaterThan(Math.max(...before.map((r) => r.position)));
    });

    it('a consumer catching up from any earlier position converges to what read() returns', async () => {
      const { store } = await ctx.fresh();
      const [a, b, c] = [streamId('a'), streamId('b'), streamId('c')];
      const consumers: FeedConsumer[] = [];
      const step = async (action: (store: EventStore) => Promise<unknown>) => {
        await action(store);
        const consumer = new FeedConsumer();
        await consumer.catchUp(store);
        consumers.push(consumer);
      };
      consumers.push(new FeedConsumer());
      await step((st) => appendTypes(st, a, ['A1', 'A2', 'A3']));
      await step((st) => appendTypes(st, b, ['B1', 'B2', 'B3']));
      await step((st) => st.compact(a, snapshotOf(a, 2)));
      await step((st) => appendTypes(st, a, ['A4']));
      await step((st) => st.deleteStream(b, { expectedRevision: 3 }));
      await step((st) => appendTypes(st, b, ['B1-again']));
      await step((st) => st.restoreStream(c, snapshotOf(c, 4)));
      await step((st) => st.compact(b, snapshotOf(b, 1)));
      await step((st) => appendTypes(st, c, ['C5']));
      await step((st) => st.compact(a, snapshotOf(a, 4)));
      await step((st) => st.deleteStream(c, { expectedRevision: 'any' }));
      const truth = await viewsFromReads(store);
      expect(truth.map((v) => v.stream)).toEqual([a, b].sort());
      for (const [index, consumer] of consumers.entries()) {
        await consumer.catchUp(store);
        expect(consumer.views(), `consumer that stopped after step ${index}`).toEqual(truth);
      }
    });

    it('a rejected append reserves nothing: the feed shows the appends that follow it', async () => {
      const { store } = await ctx.fresh();
      const [s, other] = [streamId('s'), streamId('other')];
      await appendTypes(store, s, ['A']);
      const before = await readFeed(store);
      await expectInvalid(() =>
        store.append(
          s,
          [
            { type: 'B', data: 1 },
            { type: 'C', data: (() => undefined) as never },
          ],
          { expectedRevision: 1 },
        ),
      );
      await expectInvalid(() =>
        store.append(
          s,
          [
            { type: 'B', data: 1 },
            { type: 'C', data: 2, eventId: 'e' },
            { type: 'D', data: 3, eventId: 'e' },
          ],
          { expectedRevision: 1 },
        ),
      );
      await store.append(s, [{ type: 'X', data: 1 }], { expectedRevision: 5 }).catch(() => undefined);
      expect(await readFeed(store)).toEqual(before);
      const next = await appendTypes(store, s, ['B'], 1);
      const elsewhere = await appendTypes(store, other, ['O'], 'no_stream');
      const feed = await readFeed(store);
      expect(summary(feed)).toEqual([`${s}:A@1`, `${s}:B@2`, `${other}:O@1`]);
      expect(feed.map((r) => r.position)).toEqual([before[0]!.position, next.position, elsewhere.position]);
    });

    it.each([0, -3, 2.5])('fromPosition %s is InvalidInputError', async (from) => {
      const { store } = await ctx.fresh();
      await appendTypes(store, streamId(), ['A']);
      await expectInvalid(() => readFeed(store, from));
    });
  });
}
