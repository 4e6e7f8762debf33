import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import {
  skipWithout,
  appendTypes,
  expectClosed,
  expectConflict,
  listBlobs,
  listStreams,
  observe,
  readFeed,
  readStream,
  snapshotOf,
  streamId,
  type SuiteContext,
} from '../support.js';

/** A fresh store is empty, a closed store refuses work, and a reopened store has kept everything. */
export function describeLifecycleRules(ctx: SuiteContext): void {
  describe('lifecycle', () => {
    it('the factory returns an empty store', async () => {
      const { store } = await ctx.fresh();
      expect(await listStreams(store)).toEqual([]);
      expect(await readFeed(store)).toEqual([]);
    });

    it('every method rejects with StoreClosedError after close', async () => {
      const harness = await ctx.fresh();
      const { store } = harness;
      const s = streamId();
      await appendTypes(store, s, ['A']);
      const sha = await store.putBlob(s, new Uint8Array([1]));
      await harness.close();
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['append', () => appendTypes(store, s, ['B'])],
        ['read', () => readStream(store, s)],
        ['readAll', () => readFeed(store)],
        ['streams', () => listStreams(store)],
        ['compact', () => store.compact(s, snapshotOf(s, 1))],
        ['restoreStream', () => store.restoreStream(streamId(), snapshotOf(s, 1))],
        ['deleteStream', () => store.deleteStream(s, { expectedRevision: 'any' })],
        ['putBlob', () => store.putBlob(s, new Uint8Array([2]))],
        ['getBlob', () => store.getBlob(sha)],
        ['blobs', () => listBlobs(store, s)],
      ];
      for (const [method, call] of calls) {
        await expectClosed(call).catch((error: unknown) => {
          throw new Error(`${method} after close: ${String(error)}`, { cause: error });
        });
      }
    });

    it('everything survives a reopen [capability: reopen]', async (t) => {
      skipWithout(t, !ctx.caps.reopen, 'needs capabilities.reopen');
      const harness = await ctx.fresh();
      const [a, b, c, gone] = [streamId('a'), streamId('b'), streamId('c'), streamId('gone')];
      let store = harness.store;
      await store.append(
        a,
        [
          { type: 'A1', data: { n: 1 }, eventId: 'a-1' },
          { type: 'A2', data: 'two' },
        ],
        { expectedRevision: 'no_stream' },
      );
      await appendTypes(store, b, ['B1', 'B2', 'B3']);
      await store.compact(b, snapshotOf(b, 2, { kept: true }));
      await store.restoreStream(c, snapshotOf(c, 5));
      await appendTypes(store, gone, ['G']);
      await store.putBlob(a, new Uint8Array([1, 2]));
      await store.putBlob(gone, new Uint8Array([3]));
      await store.deleteStream(gone, { expectedRevision: 1 });
      const before = await observe(store, [a, b, c, gone]);
      store = await harness.reopen();
      expect(await observe(store, [a, b, c, gone])).toEqual(before);
      expect(
        await store.getBlob(
          createHash('sha256')
            .update(new Uint8Array([3]))
            .digest('hex'),
        ),
      ).toBeUndefined();
    });

    it('after a reopen, revisions and positions continue and expected revisions still hold [capability: reopen]', async (t) => {
      skipWithout(t, !ctx.caps.reopen, 'needs capabilities.reopen');
      const harness = await ctx.fresh();
      const s = streamId();
      await appendTypes(harness.store, s, ['A', 'B']);
      await harness.store.compact(s, snapshotOf(s, 1));
      const last = (await readFeed(harness.store)).at(-1)!.position;
      const store = await harness.reopen();
      await expectConflict(() => appendTypes(store, s, ['X'], 1), { stream: s, expected: 1, actual: 2 });
      const next = await appendTypes(store, s, ['C'], 2);
      expect(next.revision).toBe(3);
      expect(next.position).toBeGreaterThan(last);
      const other = await appendTypes(store, streamId(), ['D'], 'no_stream');
      expect(other.position).toBeGreaterThan(next.position);
    });
  });
}
