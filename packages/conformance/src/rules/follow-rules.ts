import { describe, expect, it } from 'vitest';
import { SNAPSHOT_RECORD, DELETED_RECORD, type EventStore, type RecordedEvent } from '@sessionfold/core/kernel';
import { appendTypes, expectInvalid, readFeed, skipWithout, skipWithoutMember, snapshotOf, streamId, type SuiteContext } from '../support.js';

const summary = (records: RecordedEvent[]) => records.map((r) => `${r.streamId}:${r.type}@${r.revision}`);

/** A follow running in the background: what it yielded so far, and how it ended. */
class Follower {
  readonly records: RecordedEvent[] = [];
  readonly controller = new AbortController();
  readonly ended: Promise<'returned' | Error>;
  /** Time each record arrived (performance.now()). */
  readonly arrivals: number[] = [];
  #wake: (() => void) | undefined;

  constructor(store: EventStore & Required<Pick<EventStore, 'follow'>>, fromPosition?: number) {
    const iterable = store.follow({
      ...(fromPosition === undefined ? {} : { fromPosition }),
      signal: this.controller.signal,
    });
    this.ended = (async () => {
      try {
        for await (const record of iterable) {
          this.records.push(record);
          this.arrivals.push(performance.now());
          this.#wake?.();
        }
        return 'returned' as const;
      } catch (error) {
        return error as Error;
      } finally {
        this.#wake?.();
      }
    })();
  }

  /** Waits until `count` records arrived; fails after `timeoutMs`. */
  async until(count: number, timeoutMs = 5000): Promise<RecordedEvent[]> {
    const deadline = performance.now() + timeoutMs;
    while (this.records.length < count) {
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`follow yielded ${this.records.length} records, expected ${count}: ${summary(this.records).join(', ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.records;
  }

  stop(): Promise<'returned' | Error> {
    this.controller.abort();
    return this.ended;
  }
}

/** Resolves with how the follow ended, or 'still running' after `ms`. */
function endsWithin(follower: Follower, ms: number): Promise<'returned' | Error | 'still running'> {
  return Promise.race([follower.ended, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), ms))]);
}

/** `follow`: the change feed past its end, exactly once and in order, ending on abort and on close. */
export function describeFollowRules(ctx: SuiteContext): void {
  describe('follow [optional member]', () => {
    it('yields the existing changes, then each new one, in position order and exactly once', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'follow');
      const [a, b] = [streamId('a'), streamId('b')];
      await appendTypes(store, a, ['A1', 'A2']);
      const follower = new Follower(store);
      expect(summary(await follower.until(2))).toEqual([`${a}:A1@1`, `${a}:A2@2`]);
      await appendTypes(store, b, ['B1']);
      await follower.until(3);
      await store.compact(a, snapshotOf(a, 2));
      await follower.until(4);
      await store.deleteStream(b, { expectedRevision: 1 });
      await appendTypes(store, a, ['A3']);
      await follower.until(6);
      expect(await follower.stop()).toBe('returned');
      expect(summary(follower.records)).toEqual([`${a}:A1@1`, `${a}:A2@2`, `${b}:B1@1`, `${a}:${SNAPSHOT_RECORD}@2`, `${b}:${DELETED_RECORD}@1`, `${a}:A3@3`]);
      const positions = follower.records.map((r) => r.position);
      expect(positions).toEqual([...positions].sort((x, y) => x - y));
      expect(new Set(positions).size).toBe(positions.length);
      // What follow yields is what readAll shows for the same positions.
      expect(follower.records.slice(3)).toEqual(await readFeed(store, follower.records[3]!.position));
    });

    it('a change made through the same store object wakes its followers at once, not at the next poll', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'follow');
      const s = streamId();
      const follower = new Follower(store);
      const delays: number[] = [];
      for (let n = 0; n < 5; n++) {
        // Let the follower settle into waiting, so each change has to wake it.
        await new Promise((resolve) => setTimeout(resolve, 30));
        await appendTypes(store, s, [`E${n}`]);
        const committed = performance.now();
        await follower.until(n + 1);
        delays.push(follower.arrivals[n]! - committed);
      }
      await follower.stop();
      const median = [...delays].sort((x, y) => x - y)[2]!;
      expect(median, `delays ${delays.map((d) => d.toFixed(1)).join(', ')} ms`).toBeLessThan(50);
    });

    it('starts at fromPosition', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'follow');
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      const { position } = await appendTypes(store, s, ['C']);
      const follower = new Follower(store, position);
      await appendTypes(store, s, ['D']);
      expect(summary(await follower.until(2))).toEqual([`${s}:C@3`, `${s}:D@4`]);
      await follower.stop();
    });

    it('concurrent writes while following are all yielded once, in position order', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'follow');
      const streams = [streamId('a'), streamId('b'), streamId('c')];
      const follower = new Follower(store);
      const writes = [];
      for (let round = 0; round < 10; round++) {
        for (const s of streams) writes.push(appendTypes(store, s, [`E${round}`, `F${round}`]));
      }
      await Promise.all(writes);
      const feed = await readFeed(store);
      expect(feed).toHaveLength(60);
      await follower.until(60);
      await new Promise((resolve) => setTimeout(resolve, 50));
      await follower.stop();
      expect(follower.records).toEqual(feed);
    });

    it('ends cleanly when the signal fires, also before the first record', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'follow');
      const s = streamId();
      await appendTypes(store, s, ['A']);
      const follower = new Follower(store);
      await follower.until(1);
      follower.controller.abort();
      expect(await endsWithin(follower, 2000)).toBe('returned');
      await appendTypes(store, s, ['B']);
      expect(follower.records).toHaveLength(1);
      const aborted = new AbortController();
      aborted.abort();
      const records: RecordedEvent[] = [];
      for await (const record of store.follow({ signal: aborted.signal })) records.push(record);
      expect(records).toEqual([]);
    });

    it('ends cleanly when the store closes', async (t) => {
      const harness = await ctx.fresh();
      skipWithoutMember(t, harness.store, 'follow');
      await appendTypes(harness.store, streamId(), ['A']);
      const follower = new Follower(harness.store);
      await follower.until(1);
      await harness.close();
      expect(await endsWithin(follower, 2000)).toBe('returned');
    });

    it('refuses a bad fromPosition with InvalidInputError, and a closed store with StoreClosedError', async (t) => {
      const harness = await ctx.fresh();
      skipWithoutMember(t, harness.store, 'follow');
      const { store } = harness;
      await expectInvalid(async () => {
        for await (const _ of store.follow({ fromPosition: 0 })) break;
      });
      await harness.close();
      const error = await (async () => {
        try {
          for await (const _ of store.follow({})) break;
        } catch (caught) {
          return caught as { code?: string };
        }
        return undefined;
      })();
      expect(error?.code).toBe('store_closed');
    });

    it('several followers on a second store object each see every change made by the first [capability: openSecond]', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'follow');
      skipWithout(t, !ctx.caps.openSecond, 'needs capabilities.openSecond');
      const s = streamId();
      const second = await ctx.caps.openSecond!(store);
      try {
        skipWithoutMember(t, second, 'follow');
        const followers = [new Follower(second), new Follower(second), new Follower(second)];
        for (let n = 0; n < 6; n++) {
          await appendTypes(store, s, [`E${n}`]);
          await new Promise((resolve) => setTimeout(resolve, n * 15));
        }
        for (const follower of followers) {
          expect(summary(await follower.until(6))).toEqual([0, 1, 2, 3, 4, 5].map((n) => `${s}:E${n}@${n + 1}`));
          expect(await follower.stop()).toBe('returned');
        }
      } finally {
        await second.close();
      }
    });

    it('a second store object on the same storage follows changes made by the first, within the documented delay [capability: openSecond]', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'follow');
      skipWithout(t, !ctx.caps.openSecond, 'needs capabilities.openSecond');
      const s = streamId();
      await appendTypes(store, s, ['A']);
      const second = await ctx.caps.openSecond!(store);
      try {
        skipWithoutMember(t, second, 'follow');
        const follower = new Follower(second);
        await follower.until(1);
        const delays: number[] = [];
        for (let n = 0; n < 5; n++) {
          await appendTypes(store, s, [`B${n}`]);
          const committed = performance.now();
          await follower.until(n + 2);
          delays.push(follower.arrivals[n + 1]! - committed);
        }
        // Each change is awaited before the next: a delete removes the stream's $snapshot record from the feed, so a
        // follower that had not reached it yet would (rightly, as readAll) never see it.
        await store.compact(s, snapshotOf(s, 3));
        await follower.until(7);
        await store.deleteStream(s, { expectedRevision: 6 });
        await follower.until(8);
        expect(await follower.stop()).toBe('returned');
        expect(summary(follower.records)).toEqual([
          `${s}:A@1`,
          ...[0, 1, 2, 3, 4].map((n) => `${s}:B${n}@${n + 2}`),
          `${s}:${SNAPSHOT_RECORD}@3`,
          `${s}:${DELETED_RECORD}@6`,
        ]);
        // The median, with room for a loaded test machine's scheduling: the bound is on the store's waiting, not the OS's.
        const median = [...delays].sort((x, y) => x - y)[2]!;
        expect(median, `delays ${delays.map((d) => d.toFixed(1)).join(', ')} ms`).toBeLessThanOrEqual(ctx.caps.followDelayMs + 150);
      } finally {
        await second.close();
      }
    });
  });
}
