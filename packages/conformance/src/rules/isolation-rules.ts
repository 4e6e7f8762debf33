import { describe, expect, it } from 'vitest';
import type { AppendResult, JsonObject, NewEvent, Snapshot } from '@sessionfold/core/kernel';
import { readFeed, readStream, snapshotOf, streamId, type SuiteContext } from '../support.js';

/** Stored data never aliases caller objects, in either direction. */
export function describeIsolationRules(ctx: SuiteContext): void {
  describe('no shared objects with callers', () => {
    it('mutating events after append resolves changes nothing stored', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const data = { list: [1, 2], inner: { name: 'original' } };
      const events: NewEvent[] = [{ type: 'A', data }];
      await store.append(s, events, { expectedRevision: 'no_stream' });
      data.list.push(3);
      data.inner.name = 'changed';
      events.push({ type: 'Sneaked', data: null });
      (events[0] as { type: string }).type = 'Renamed';
      const read = await readStream(store, s);
      expect(read.events.map((e) => [e.type, e.data])).toEqual([['A', { list: [1, 2], inner: { name: 'original' } }]]);
    });

    it('append captures its events when it is called, not when it resolves', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const data = { value: 'at call' };
      const pending = store.append(s, [{ type: 'A', data }], { expectedRevision: 'no_stream' });
      data.value = 'mutated while pending';
      await pending;
      expect((await readStream(store, s)).events[0]?.data).toEqual({ value: 'at call' });
    });

    it('a retry in flight gets its own result, whatever the first caller does with theirs', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const event = { type: 'A', data: 1, eventId: 'e-1' };
      let expected: AppendResult | undefined;
      // The first caller's continuation is registered before the retry exists, so it runs first.
      const first = store.append(s, [event], { expectedRevision: 'no_stream' }).then((result) => {
        expected = { ...result };
        result.revision = 99;
        result.position = 99;
      });
      const retry = store.append(s, [event], { expectedRevision: 'no_stream' });
      await first;
      expect(await retry).toEqual(expected);
      expect(await store.append(s, [event], { expectedRevision: 'any' })).toEqual(expected);
    });

    it('mutating what read and readAll return changes nothing stored', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await store.append(s, [{ type: 'A', data: { tags: ['x'] } }], { expectedRevision: 'no_stream' });
      const first = await readStream(store, s);
      (first.events[0]!.data as JsonObject).tags = ['mutated'];
      first.events[0]!.revision = 99;
      const feed = await readFeed(store);
      ((feed[0]!.data as JsonObject).tags as string[]).push('mutated');
      const again = await readStream(store, s);
      expect(again.events.map((e) => [e.revision, e.data])).toEqual([[1, { tags: ['x'] }]]);
      expect((await readFeed(store)).map((e) => e.data)).toEqual([{ tags: ['x'] }]);
    });

    it('mutating a snapshot after compact or restoreStream, or one read back, changes nothing stored', async () => {
      const { store } = await ctx.fresh();
      const [s, r] = [streamId(), streamId()];
      await store.append(s, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      const compacted: Snapshot = snapshotOf(s, 1, { items: ['a'] });
      const restored: Snapshot = snapshotOf(r, 4, { items: ['b'] });
      await store.compact(s, compacted);
      await store.restoreStream(r, restored);
      ((compacted.state as JsonObject).items as string[]).push('mutated');
      compacted.identity.schemaVersion = 42;
      ((restored.state as JsonObject).items as string[]).push('mutated');
      const readBack = (await readStream(store, s)).snapshot!;
      ((readBack.state as JsonObject).items as string[]).push('mutated');
      readBack.revision = 77;
      const feedSnapshot = (await readFeed(store))[0]!.data as unknown as Snapshot;
      ((feedSnapshot.state as JsonObject).items as string[]).push('mutated');
      expect((await readStream(store, s)).snapshot).toEqual(snapshotOf(s, 1, { items: ['a'] }));
      expect((await readStream(store, r)).snapshot).toEqual(snapshotOf(r, 4, { items: ['b'] }));
      expect((await readFeed(store)).map((e) => e.data)).toEqual([snapshotOf(s, 1, { items: ['a'] }), snapshotOf(r, 4, { items: ['b'] })]);
    });

    it('mutating bytes after putBlob, or bytes getBlob returned, changes nothing stored', async () => {
      const { store } = await ctx.fresh();
      const bytes = new Uint8Array([1, 2, 3]);
      const sha = await store.putBlob(streamId(), bytes);
      bytes[0] = 9;
      const first = (await store.getBlob(sha))!;
      expect([...first]).toEqual([1, 2, 3]);
      first[1] = 9;
      expect([...(await store.getBlob(sha))!]).toEqual([1, 2, 3]);
    });
  });
}
