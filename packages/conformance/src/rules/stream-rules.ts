import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { InvalidInputError } from '@sessionfold/core/kernel';
import { appendTypes, expectConflict, expectInvalid, listStreams, observe, readFeed, readStream, snapshotOf, streamId, type SuiteContext } from '../support.js';

/** Listing streams, compacting, restoring and deleting them. */
export function describeStreamRules(ctx: SuiteContext): void {
  describe('streams', () => {
    it('lists existing streams in ascending name order with their revisions', async () => {
      const { store } = await ctx.fresh();
      const base = `l${randomBytes(3).toString('hex')}`;
      const names = [`${base}-b`, `${base}.a`, `${base}_c`, `${base}-a`, `${base}Z`, `${base}0`];
      for (const [index, name] of names.entries())
        await appendTypes(
          store,
          name,
          Array.from({ length: index + 1 }, () => 'E'),
        );
      const listed = await listStreams(store);
      const expected = names.map((stream, index) => ({ stream, revision: index + 1 })).sort((x, y) => (x.stream < y.stream ? -1 : 1));
      expect(listed).toEqual(expected);
    });

    it('prefix is a literal, case-sensitive prefix of the name', async () => {
      const { store } = await ctx.fresh();
      const base = `p${randomBytes(3).toString('hex')}`;
      for (const name of [`${base}_x`, `${base}-x`, `${base}ax`, `${base.toUpperCase()}_x`, `${base}`, `q${base}`]) {
        await appendTypes(store, name, ['E']);
      }
      const names = async (prefix: string) => (await listStreams(store, prefix)).map((e) => e.stream);
      expect(await names(`${base}_`)).toEqual([`${base}_x`]);
      expect(await names(`${base}-`)).toEqual([`${base}-x`]);
      expect(await names(base)).toEqual([base, `${base}-x`, `${base}_x`, `${base}ax`]);
      expect(await names(base.toUpperCase())).toEqual([`${base.toUpperCase()}_x`]);
      expect(await names(`${base}%`)).toEqual([]);
      expect(await names(`${base}zz`)).toEqual([]);
      expect((await names('')).length).toBe(6);
    });

    it.each(['../', '/', '.', '*', '%', '?', 'a/..'])(
      'a prefix no stream id can start with (%j) lists nothing, or is refused as InvalidInputError',
      async (prefix) => {
        const { store } = await ctx.fresh();
        await appendTypes(store, streamId('a'), ['E']);
        const outcome = await listStreams(store, prefix).then(
          (listed) => ({ listed }),
          (error: unknown) => ({ error }),
        );
        if ('error' in outcome) {
          expect(outcome.error).toBeInstanceOf(InvalidInputError);
          expect((outcome.error as InvalidInputError).code).toBe('invalid_input');
        } else {
          expect(outcome.listed).toEqual([]);
        }
      },
    );

    it('deleted streams are not listed; compacted and restored streams are', async () => {
      const { store } = await ctx.fresh();
      const [gone, compacted, restored] = ['gone', 'compacted', 'restored'].map((label) => streamId(label)) as [string, string, string];
      await appendTypes(store, gone, ['A']);
      await appendTypes(store, compacted, ['A', 'B']);
      await store.compact(compacted, snapshotOf(compacted, 2));
      await store.restoreStream(restored, snapshotOf(restored, 9));
      await store.deleteStream(gone, { expectedRevision: 1 });
      expect(await listStreams(store)).toEqual(
        [
          { stream: compacted, revision: 2 },
          { stream: restored, revision: 9 },
        ].sort((x, y) => (x.stream < y.stream ? -1 : 1)),
      );
    });
  });

  describe('compact', () => {
    it('read folds to the same state afterwards and revisions keep counting', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B', 'C', 'D']);
      await store.compact(s, snapshotOf(s, 2, { count: 2 }));
      const read = await readStream(store, s);
      expect(read.revision).toBe(4);
      expect(read.snapshot).toEqual(snapshotOf(s, 2, { count: 2 }));
      expect(read.events.map((e) => [e.revision, e.type])).toEqual([
        [3, 'C'],
        [4, 'D'],
      ]);
      expect((await appendTypes(store, s, ['E'], 4)).revision).toBe(5);
      await expectConflict(() => appendTypes(store, s, ['F'], 2), { stream: s, expected: 2, actual: 5 });
    });

    it('compacting at the head keeps only the snapshot, and the same revision may be compacted again', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      await store.compact(s, snapshotOf(s, 2, 'first'));
      expect(await readStream(store, s)).toEqual({ revision: 2, snapshot: snapshotOf(s, 2, 'first'), events: [] });
      await store.compact(s, snapshotOf(s, 2, 'second'));
      expect((await readStream(store, s)).snapshot).toEqual(snapshotOf(s, 2, 'second'));
      expect((await listStreams(store, s)).map((e) => e.revision)).toEqual([2]);
    });

    it('a snapshot past the head is InvalidInputError and changes nothing', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      const before = await observe(store, [s]);
      await expectInvalid(() => store.compact(s, snapshotOf(s, 3)));
      expect(await observe(store, [s])).toEqual(before);
    });

    it('a snapshot older than the stored one is InvalidInputError and changes nothing', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B', 'C']);
      await store.compact(s, snapshotOf(s, 2));
      const before = await observe(store, [s]);
      await expectInvalid(() => store.compact(s, snapshotOf(s, 1)));
      expect(await observe(store, [s])).toEqual(before);
    });

    it('compacting a missing stream is InvalidInputError and creates nothing', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await expectInvalid(() => store.compact(s, snapshotOf(s, 1)));
      expect(await observe(store, [s])).toEqual({ reads: [{ stream: s, read: { revision: 0, events: [] }, blobs: [] }], feed: [], listed: [] });
    });

    it('a snapshot whose identity names another stream is InvalidInputError', async () => {
      const { store } = await ctx.fresh();
      const [s, t] = [streamId(), streamId()];
      await appendTypes(store, s, ['A']);
      await appendTypes(store, t, ['A']);
      const before = await observe(store, [s, t]);
      await expectInvalid(() => store.compact(s, snapshotOf(t, 1)));
      expect(await observe(store, [s, t])).toEqual(before);
    });

    it.each<[string, (stream: string) => Record<string, unknown>]>([
      ['revision 0', () => ({ revision: 0 })],
      ['a fractional revision', () => ({ revision: 1.5 })],
      ['a non-JSON state', () => ({ state: { at: new Date(0) } })],
      ['no identity', () => ({ identity: undefined })],
      ['a negative schema version', (stream) => ({ identity: { stream, schemaVersion: -1 } })],
      ['a fractional schema version', (stream) => ({ identity: { stream, schemaVersion: 1.5 } })],
    ])('a snapshot with %s is InvalidInputError for compact and restoreStream', async (_label, patch) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      const build = (stream: string) => ({ ...snapshotOf(stream, 1), ...patch(stream) });
      const r = streamId('restored');
      const before = await observe(store, [s, r]);
      await expectInvalid(() => store.compact(s, build(s) as never));
      await expectInvalid(() => store.restoreStream(r, build(r) as never));
      expect(await observe(store, [s, r])).toEqual(before);
    });
  });

  describe('restoreStream', () => {
    it("creates a missing stream at the snapshot's revision; appends continue after it", async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const snapshot = snapshotOf(s, 5, { restored: true });
      const result = await store.restoreStream(s, snapshot);
      expect(result.revision).toBe(5);
      expect(await readStream(store, s)).toEqual({ revision: 5, snapshot, events: [] });
      expect((await appendTypes(store, s, ['Next'], 5)).revision).toBe(6);
      expect((await readStream(store, s)).events.map((e) => e.revision)).toEqual([6]);
      expect(result.position).toBeLessThan((await readFeed(store)).at(-1)!.position);
    });

    it('restoring onto an existing stream is a ConcurrencyError and changes nothing', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      const before = await observe(store, [s]);
      await expectConflict(() => store.restoreStream(s, snapshotOf(s, 9)), { stream: s, expected: 'no_stream', actual: 2 });
      expect(await observe(store, [s])).toEqual(before);
    });

    it('a deleted stream can be restored', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A']);
      await store.deleteStream(s, { expectedRevision: 1 });
      await store.restoreStream(s, snapshotOf(s, 3));
      expect((await readStream(store, s)).revision).toBe(3);
    });

    it('a snapshot whose identity names another stream is InvalidInputError and creates nothing', async () => {
      const { store } = await ctx.fresh();
      const [s, t] = [streamId(), streamId()];
      await expectInvalid(() => store.restoreStream(s, snapshotOf(t, 2)));
      expect(await observe(store, [s, t])).toEqual({
        reads: [
          { stream: s, read: { revision: 0, events: [] }, blobs: [] },
          { stream: t, read: { revision: 0, events: [] }, blobs: [] },
        ],
        feed: [],
        listed: [],
      });
    });
  });

  describe('deleteStream', () => {
    it('removes events and snapshot: the stream reads as missing and is not listed', async () => {
      const { store } = await ctx.fresh();
      const [s, other] = [streamId(), streamId()];
      await appendTypes(store, s, ['A', 'B', 'C']);
      await appendTypes(store, other, ['A']);
      await store.compact(s, snapshotOf(s, 2));
      await store.deleteStream(s, { expectedRevision: 3 });
      expect(await readStream(store, s)).toEqual({ revision: 0, events: [] });
      expect(await listStreams(store)).toEqual([{ stream: other, revision: 1 }]);
      expect((await readStream(store, other)).revision).toBe(1);
    });

    it.each([
      ['a wrong revision', 2],
      ["'no_stream'", 'no_stream'],
    ] as const)('expecting %s is a ConcurrencyError and deletes nothing', async (_label, expected) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B', 'C']);
      await store.putBlob(s, new Uint8Array([1, 2, 3]));
      const before = await observe(store, [s]);
      await expectConflict(() => store.deleteStream(s, { expectedRevision: expected }), { stream: s, expected, actual: 3 });
      expect(await observe(store, [s])).toEqual(before);
    });

    it.each(['any', 'no_stream', 0] as const)('deleting a missing stream expecting %s is a no-op', async (expected) => {
      const { store } = await ctx.fresh();
      const [s, other] = [streamId(), streamId()];
      await appendTypes(store, other, ['A']);
      const before = await observe(store, [s, other]);
      await store.deleteStream(s, { expectedRevision: expected });
      expect(await observe(store, [s, other])).toEqual(before);
    });

    it('a deleted stream starts again from revision 1', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['A', 'B']);
      await store.deleteStream(s, { expectedRevision: 'any' });
      expect((await appendTypes(store, s, ['Fresh'], 'no_stream')).revision).toBe(1);
      expect((await readStream(store, s)).events.map((e) => [e.revision, e.type])).toEqual([[1, 'Fresh']]);
    });
  });
}
