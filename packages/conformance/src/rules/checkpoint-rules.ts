import { describe, expect, it } from 'vitest';
import { copyStore, memoryStore } from '@sessionfold/core/kernel';
import { appendTypes, expectClosed, expectInvalid, listStreams, readFeed, skipWithout, skipWithoutMember, streamId, type SuiteContext } from '../support.js';

/** The checkpoint slot: round trips, stays out of streams, the feed and copies, survives a reopen, bound to the store id. */
export function describeCheckpointRules(ctx: SuiteContext): void {
  describe('checkpoints [optional member]', () => {
    it('load returns what save stored, bytes as bytes and text as text; a name never saved is undefined', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'checkpoints');
      const slot = store.checkpoints;
      expect(await slot.load('projection')).toBeUndefined();
      await slot.save('projection', '{"position":1}');
      await slot.save('binary', new Uint8Array([0, 255, 10, 13]));
      expect(await slot.load('projection')).toBe('{"position":1}');
      const bytes = await slot.load('binary');
      expect(bytes).toBeInstanceOf(Uint8Array);
      expect([...(bytes as Uint8Array)]).toEqual([0, 255, 10, 13]);
      await slot.save('projection', 'é'.repeat(100_000));
      expect(await slot.load('projection')).toBe('é'.repeat(100_000));
      await slot.save('projection', '');
      expect(await slot.load('projection')).toBe('');
      expect(await slot.load('other')).toBeUndefined();
    });

    it('checkpoints are not in the streams, the feed or a copy', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'checkpoints');
      await store.checkpoints.save('projection', 'state');
      expect(await listStreams(store)).toEqual([]);
      expect(await readFeed(store)).toEqual([]);
      const s = streamId();
      await appendTypes(store, s, ['A']);
      await store.checkpoints.save('projection', 'state-2');
      expect((await readFeed(store)).map((r) => r.type)).toEqual(['A']);
      if (store.follow) {
        const controller = new AbortController();
        const seen: string[] = [];
        setTimeout(() => controller.abort(), 300);
        for await (const record of store.follow({ signal: controller.signal })) seen.push(record.type);
        expect(seen).toEqual(['A']);
      }
      const copy = memoryStore();
      await copyStore(store, copy);
      expect(await copy.checkpoints.load('projection')).toBeUndefined();
      expect(await copy.checkpoints.storeId()).not.toBe(await store.checkpoints.storeId());
    });

    it('storeId is the same on every call and differs between stores', async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'checkpoints');
      const other = await ctx.fresh();
      skipWithoutMember(t, other.store, 'checkpoints');
      const id = await store.checkpoints.storeId();
      expect(typeof id).toBe('string');
      expect(id.length).toBeGreaterThan(0);
      expect(await store.checkpoints.storeId()).toBe(id);
      expect(await other.store.checkpoints.storeId()).not.toBe(id);
    });

    it('checkpoints and the store id survive a reopen [capability: reopen]', async (t) => {
      const harness = await ctx.fresh();
      skipWithoutMember(t, harness.store, 'checkpoints');
      skipWithout(t, !ctx.caps.reopen, 'needs capabilities.reopen');
      const id = await harness.store.checkpoints.storeId();
      await harness.store.checkpoints.save('projection', 'kept');
      await harness.store.checkpoints.save('bytes', new Uint8Array([7]));
      const slot = (await harness.reopen()).checkpoints;
      if (slot === undefined) return expect.fail('the reopened store has no checkpoints');
      expect(await slot.storeId()).toBe(id);
      expect(await slot.load('projection')).toBe('kept');
      expect([...((await slot.load('bytes')) as Uint8Array)]).toEqual([7]);
    });

    it('refuses bad names and data with InvalidInputError, and a closed store with StoreClosedError', async (t) => {
      const harness = await ctx.fresh();
      skipWithoutMember(t, harness.store, 'checkpoints');
      const slot = harness.store.checkpoints;
      for (const name of ['', '../x', 'a/b', '.hidden', 'x'.repeat(129), 7]) {
        await expectInvalid(() => slot.save(name as string, 'data'));
        await expectInvalid(() => slot.load(name as string));
      }
      await expectInvalid(() => slot.save('n', 5 as unknown as string));
      await expectInvalid(() => slot.save('n', '\ud800'));
      await harness.close();
      await expectClosed(() => slot.load('n'));
      await expectClosed(() => slot.save('n', 'x'));
      await expectClosed(() => slot.storeId());
    });
  });
}
