import { describe, expect, it } from 'vitest';
import { expectClosed, readFeed, skipWithout, snapshotOf, appendTypes, streamId, type SuiteContext } from '../support.js';

/** The optional `status()`: where the feed is, and nothing held back on an idle store. */
export function describeStatusRules(ctx: SuiteContext): void {
  describe('status', () => {
    it('reports the last position of the feed and nothing holding it back when idle [capability: status]', async (t) => {
      skipWithout(t, !ctx.caps.status, 'needs capabilities.status');
      const { store } = await ctx.fresh();
      const status = store.status?.bind(store);
      expect(status, 'the store implements status()').toBeTypeOf('function');
      if (status === undefined) return;
      expect(await status()).toMatchObject({ lastPosition: 0, holdingBack: [] });
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      await store.compact(s, snapshotOf(s, 1));
      const last = (await readFeed(store)).at(-1)?.position;
      expect(await status()).toMatchObject({ lastPosition: last, holdingBack: [] });
    });

    it('rejects with StoreClosedError after close [capability: status]', async (t) => {
      skipWithout(t, !ctx.caps.status, 'needs capabilities.status');
      const harness = await ctx.fresh();
      await harness.close();
      await expectClosed(() => harness.store.status?.());
    });
  });
}
