import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { appendTypes, expectInvalid, listBlobs, skipWithout, streamId, type SuiteContext } from '../support.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const bytesOf = (...values: number[]) => new Uint8Array(values);

/** Content-addressed blobs owned by streams. */
export function describeBlobRules(ctx: SuiteContext): void {
  describe('blobs', () => {
    it('putBlob returns the lowercase hex sha256 and getBlob returns the same bytes', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const samples = [new Uint8Array(0), bytesOf(0, 10, 13, 255), Uint8Array.from({ length: 256 }, (_, i) => i), new Uint8Array(200_000).fill(7)];
      for (const bytes of samples) {
        const sha = await store.putBlob(s, bytes);
        expect(sha).toBe(sha256(bytes));
        const back = await store.getBlob(sha);
        expect(back).toBeInstanceOf(Uint8Array);
        expect(Buffer.from(back!).equals(Buffer.from(bytes))).toBe(true);
      }
    });

    it('getBlob of an unknown sha256 is undefined', async () => {
      const { store } = await ctx.fresh();
      expect(await store.getBlob(sha256(bytesOf(1, 2, 3, 4)))).toBeUndefined();
    });

    it.each([
      ['uppercase hex', 'A'.repeat(64)],
      ['63 digits', 'a'.repeat(63)],
      ['65 digits', 'a'.repeat(65)],
      ['non-hex letters', 'g'.repeat(64)],
      ['a path', `../${'a'.repeat(61)}`],
      ['an empty string', ''],
    ])('a sha256 with %s is InvalidInputError', async (_label, sha) => {
      const { store } = await ctx.fresh();
      await expectInvalid(() => store.getBlob(sha));
    });

    it('putBlob refuses a bad stream id or something that is not a Uint8Array', async () => {
      const { store } = await ctx.fresh();
      await expectInvalid(() => store.putBlob('../escape', bytesOf(1)));
      await expectInvalid(() => store.putBlob(streamId(), 'text' as unknown as Uint8Array));
    });

    it('blobs(stream) lists the blobs a stream owns, ascending, each once', async () => {
      const { store } = await ctx.fresh();
      const [s, t] = [streamId(), streamId()];
      const shas = [];
      for (let i = 0; i < 5; i++) shas.push(await store.putBlob(s, bytesOf(i, i + 1)));
      await store.putBlob(s, bytesOf(0, 1));
      const other = await store.putBlob(t, bytesOf(99));
      expect(await listBlobs(store, s)).toEqual([...shas].sort());
      expect(await listBlobs(store, t)).toEqual([other]);
      expect(await listBlobs(store, streamId())).toEqual([]);
    });

    it('deleteStream removes the blobs only that stream owned and keeps shared ones', async () => {
      const { store } = await ctx.fresh();
      const [s, t] = [streamId(), streamId()];
      await appendTypes(store, s, ['A']);
      await appendTypes(store, t, ['A']);
      const own = await store.putBlob(s, bytesOf(1, 1, 1));
      const shared = await store.putBlob(s, bytesOf(2, 2, 2));
      await store.putBlob(t, bytesOf(2, 2, 2));
      const others = await store.putBlob(t, bytesOf(3, 3, 3));
      await store.deleteStream(s, { expectedRevision: 1 });
      expect(await store.getBlob(own)).toBeUndefined();
      expect(Buffer.from((await store.getBlob(shared))!).equals(Buffer.from(bytesOf(2, 2, 2)))).toBe(true);
      expect(await store.getBlob(others)).toBeDefined();
      expect(await listBlobs(store, s)).toEqual([]);
      expect(await listBlobs(store, t)).toEqual([shared, others].sort());
    });

    it('blobs and their owners survive a reopen, and every blob blobs(stream) lists can be read [capability: reopen]', async (t) => {
      skipWithout(t, !ctx.caps.reopen, 'needs capabilities.reopen');
      const harness = await ctx.fresh();
      const [withEvents, blobsOnly] = [streamId(), streamId()];
      await appendTypes(harness.store, withEvents, ['A']);
      const owned = [await harness.store.putBlob(withEvents, bytesOf(5, 5)), await harness.store.putBlob(withEvents, bytesOf(6))].sort();
      const alone = await harness.store.putBlob(blobsOnly, bytesOf(7, 7, 7));
      const store = await harness.reopen();
      expect(await listBlobs(store, withEvents)).toEqual(owned);
      expect(await listBlobs(store, blobsOnly)).toEqual([alone]);
      for (const stream of [withEvents, blobsOnly]) {
        for (const sha of await listBlobs(store, stream)) expect(await store.getBlob(sha), sha).toBeDefined();
      }
    });
  });
}
