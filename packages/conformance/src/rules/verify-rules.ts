import { describe, expect, it } from 'vitest';
import { appendTypes, expectClosed, observe, skipWithoutMember, snapshotOf, streamId, type SuiteContext } from '../support.js';

/** `verify`: a full check that writes nothing; on a store only the port has written to, it finds no error. */
export function describeVerifyRules(ctx: SuiteContext): void {
  describe('verify [optional member]', () => {
    it('finds no error in a store written through the port, and changes nothing', async (t) => {
      const harness = await ctx.fresh();
      const { store } = harness;
      skipWithoutMember(t, store, 'verify');
      const empty = await store.verify();
      expect(empty.problems.filter((p) => p.severity === 'error')).toEqual([]);
      expect(empty.ok).toBe(true);
      const [a, b, c, gone] = [streamId('a'), streamId('b'), streamId('c'), streamId('gone')];
      await store.append(
        a,
        [
          { type: 'A1', data: { n: 1 }, eventId: 'a-1' },
          { type: 'A2', data: 'two' },
        ],
        { expectedRevision: 'no_stream' },
      );
      await appendTypes(store, b, ['B1', 'B2', 'B3']);
      await store.compact(b, snapshotOf(b, 2));
      await store.restoreStream(c, snapshotOf(c, 4));
      await appendTypes(store, gone, ['G']);
      await store.putBlob(a, new Uint8Array([1, 2, 3]));
      await store.putBlob(gone, new Uint8Array([4]));
      await store.deleteStream(gone, { expectedRevision: 1 });
      const before = await observe(store, [a, b, c, gone]);
      const report = await store.verify();
      expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
      expect(report.ok).toBe(true);
      expect(report.checked.streams).toBe(3);
      expect(report.checked.records).toBeGreaterThanOrEqual(3);
      expect(report.checked.snapshots).toBeGreaterThanOrEqual(2);
      expect(report.checked.blobs).toBe(1);
      expect(await observe(store, [a, b, c, gone])).toEqual(before);
      await appendTypes(store, a, ['A3'], 2);
    });

    it("an aborted verify rejects with the signal's reason", async (t) => {
      const { store } = await ctx.fresh();
      skipWithoutMember(t, store, 'verify');
      await appendTypes(store, streamId(), ['A']);
      const controller = new AbortController();
      const reason = new Error('stop');
      controller.abort(reason);
      await expect(store.verify({ signal: controller.signal })).rejects.toBe(reason);
    });

    it('rejects with StoreClosedError after close', async (t) => {
      const harness = await ctx.fresh();
      const { store } = harness;
      skipWithoutMember(t, store, 'verify');
      await harness.close();
      await expectClosed(() => store.verify());
    });
  });
}
