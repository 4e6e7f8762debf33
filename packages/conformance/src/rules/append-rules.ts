import { describe, expect, it } from 'vitest';
import type { ExpectedRevision, JsonValue, NewEvent } from '@sessionfold/core/kernel';
import { appendTypes, expectConflict, expectInvalid, expectedStored, observe, readFeed, readStream, stored, streamId, type SuiteContext } from '../support.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)$/;

/** Appends: atomic batches, expected revisions, 1-based gap-free revisions, increasing positions. */
export function describeAppendRules(ctx: SuiteContext): void {
  describe('append', () => {
    it('numbers revisions from 1 without gaps and returns the last event of the batch', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const first = await appendTypes(store, s, ['A', 'B'], 'no_stream');
      const second = await appendTypes(store, s, ['C'], 2);
      const third = await appendTypes(store, s, ['D', 'E', 'F'], 'any');
      expect([first.revision, second.revision, third.revision]).toEqual([2, 3, 6]);
      const { revision, events } = await readStream(store, s);
      expect(revision).toBe(6);
      expect(events.map((e) => e.revision)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(events.map((e) => e.type)).toEqual(['A', 'B', 'C', 'D', 'E', 'F']);
      expect(events[1]?.position).toBe(first.position);
      expect(events[2]?.position).toBe(second.position);
      expect(events[5]?.position).toBe(third.position);
    });

    it('gives strictly increasing positions in commit order across streams', async () => {
      const { store } = await ctx.fresh();
      const [a, b] = [streamId('a'), streamId('b')];
      const results = [];
      results.push(await appendTypes(store, a, ['A1', 'A2']));
      results.push(await appendTypes(store, b, ['B1']));
      results.push(await appendTypes(store, a, ['A3']));
      results.push(await appendTypes(store, b, ['B2', 'B3']));
      const positions = results.map((r) => r.position);
      expect([...positions].sort((x, y) => x - y)).toEqual(positions);
      expect(new Set(positions).size).toBe(positions.length);
      const feed = await readFeed(store);
      expect(feed.map((r) => r.type)).toEqual(['A1', 'A2', 'B1', 'A3', 'B2', 'B3']);
      for (let i = 1; i < feed.length; i++) expect(feed[i]!.position).toBeGreaterThan(feed[i - 1]!.position);
      for (const event of feed) expect(Number.isSafeInteger(event.position) && event.position >= 1).toBe(true);
    });

    it('records the stream, type, data, eventId, revision, position and an ISO 8601 UTC time', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const events: NewEvent[] = [
        { type: 'Opened', data: { by: 'ann', tags: ['x', 'y'] }, eventId: 'req-1' },
        { type: 'Noted', data: 'plain text' },
      ];
      const result = await store.append(s, events, { expectedRevision: 'no_stream' });
      const { events: read } = await readStream(store, s);
      expect(read.map(stored)).toEqual([expectedStored(s, events[0]!, 1), expectedStored(s, events[1]!, 2)]);
      expect(read[1]!.position).toBe(result.position);
      expect(read[1]!.eventId).toBeUndefined();
      for (const event of read) {
        expect(event.recordedAt).toMatch(ISO_UTC);
        expect(Number.isNaN(Date.parse(event.recordedAt))).toBe(false);
      }
    });

    it('stores data exactly as JSON round-trips it', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      const values: JsonValue[] = [
        null,
        true,
        0,
        -1.5,
        1e300,
        5e-324,
        Number.MAX_SAFE_INTEGER,
        -0,
        { negativeZero: [-0] },
        '',
        'line\nbreak\ttab "quoted" \\ back',
        '\u0000\u001f\u2028\u2029',
        'héllo wörld — 日本語 🎉👩‍👩‍👧',
        '\ud800 lone surrogate',
        [],
        {},
        [1, [2, [3, { deep: [null] }]]],
        { 'key with spaces': 1, '': 'empty key', é: 'accented key', nested: { a: [true, false] } },
      ];
      await store.append(
        s,
        values.map((data) => ({ type: 'Value', data })),
        { expectedRevision: 'no_stream' },
      );
      // What JSON text gives back: the same values, except that -0 becomes 0.
      const expected = JSON.parse(JSON.stringify(values)) as JsonValue[];
      const { events } = await readStream(store, s);
      expect(events.map((e) => e.data)).toEqual(expected);
      expect((await readFeed(store)).map((e) => e.data)).toEqual(expected);
    });

    it('a batch with one bad event writes nothing', async () => {
      const { store } = await ctx.fresh();
      const s = streamId();
      await appendTypes(store, s, ['Before']);
      const before = await observe(store, [s]);
      await expectInvalid(() =>
        store.append(
          s,
          [
            { type: 'Good', data: 1 },
            { type: 'Bad', data: { when: new Date() } as unknown as JsonValue },
          ],
          {
            expectedRevision: 1,
          },
        ),
      );
      await expectInvalid(() =>
        store.append(
          s,
          [
            { type: 'Good', data: 1 },
            { type: '$snapshot', data: 2 },
          ],
          { expectedRevision: 1 },
        ),
      );
      expect(await observe(store, [s])).toEqual(before);
    });

    const conflicts: Array<[string, number, ExpectedRevision]> = [
      ['a revision behind the stream', 2, 1],
      ['a revision ahead of the stream', 2, 5],
      ["'no_stream' for an existing stream", 2, 'no_stream'],
      ["'never_existed' for an existing stream", 2, 'never_existed'],
      ['0 for an existing stream', 2, 0],
      ['a revision for a missing stream', 0, 3],
    ];
    it.each(conflicts)('expecting %s is a ConcurrencyError and writes nothing', async (_label, existing, expected) => {
      const { store } = await ctx.fresh();
      const s = streamId();
      if (existing > 0)
        await appendTypes(
          store,
          s,
          Array.from({ length: existing }, (_, i) => `E${i + 1}`),
          'no_stream',
        );
      const before = await observe(store, [s]);
      await expectConflict(() => appendTypes(store, s, ['Late'], expected), { stream: s, expected, actual: existing });
      expect(await observe(store, [s])).toEqual(before);
    });

    it("'never_existed' creates a stream that never existed, and refuses one deleted before, even after it was written again, and after a reopen", async () => {
      const harness = await ctx.fresh();
      const [fresh, gone] = [streamId('fresh'), streamId('gone')];
      expect((await appendTypes(harness.store, fresh, ['A'], 'never_existed')).revision).toBe(1);
      await appendTypes(harness.store, gone, ['A', 'B'], 'no_stream');
      await harness.store.deleteStream(gone, { expectedRevision: 2 });
      const before = await observe(harness.store, [gone]);
      const refusal = await expectConflict(() => appendTypes(harness.store, gone, ['Again'], 'never_existed'), {
        stream: gone,
        expected: 'never_existed',
        actual: 0,
      });
      expect(refusal.message).toBe(`Stream ${gone}: expected a stream that never existed, found one that was deleted.`);
      await expectConflict(() => harness.store.deleteStream(gone, { expectedRevision: 'never_existed' }), {
        stream: gone,
        expected: 'never_existed',
        actual: 0,
      });
      expect(await observe(harness.store, [gone])).toEqual(before);
      // 'no_stream' writes it again; deleted a second time, it is still refused.
      expect((await appendTypes(harness.store, gone, ['Again'], 'no_stream')).revision).toBe(1);
      await expectConflict(() => appendTypes(harness.store, gone, ['More'], 'never_existed'), { stream: gone, expected: 'never_existed', actual: 1 });
      await harness.store.deleteStream(gone, { expectedRevision: 'any' });
      const store = ctx.caps.reopen ? await harness.reopen() : harness.store;
      await expectConflict(() => appendTypes(store, gone, ['Later'], 'never_existed'), { stream: gone, expected: 'never_existed', actual: 0 });
      await store.deleteStream(streamId('never'), { expectedRevision: 'never_existed' });
      expect((await readStream(store, fresh)).revision).toBe(1);
    });

    it("'any' appends to a missing and to an existing stream; 0 works like 'no_stream'", async () => {
      const { store } = await ctx.fresh();
      const [s, t] = [streamId(), streamId()];
      expect((await appendTypes(store, s, ['A'], 'any')).revision).toBe(1);
      expect((await appendTypes(store, s, ['B'], 'any')).revision).toBe(2);
      expect((await appendTypes(store, t, ['A'], 0)).revision).toBe(1);
      expect((await readStream(store, t)).revision).toBe(1);
    });
  });
}
