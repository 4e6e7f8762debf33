import { describe, expect, it } from 'vitest';
import { expectClosed, readFeed, skipWithoutMember, snapshotOf, appendTypes, streamId, type SuiteContext } from '../support.js';

/** `status()`: where the feed is, and nothing held back on an idle store. */
export function describeStatusRules(ctx: SuiteContext): void {
  describe('status [optional member]', () => {
    it('reports the last position of the feed and nothing holding it back when idle', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'status');
      expect(await store.status()).toMatchObject({ lastPosition: 0, holdingBack: [] });
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      await store.compact(s, snapshotOf(s, 1));
      const last = (await readFeed(store)).at(-1)?.position;
      expect(await store.status()).toMatchObject({ lastPosition: last, holdingBack: [] });
    });

    it('rejects with StoreClosedError after close', async (t) => {
      const harness = await ctx.fresh();
      const { store } = harness;
      skipWithoutMember(t, store, 'status');
      await harness.close();
      await expectClosed(() => store.status());
    });
  });
}
