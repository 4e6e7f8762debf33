import { memoryStore, type EventStore, type FeedRecord } from '@sessionfold/core/kernel';
import { describe, expect, it } from 'vitest';
import { endOfFeed, followChanges, lastChanges } from './tail-feed.js';

async function noted(store: EventStore, stream: string, count: number): Promise<void> {
  const events = Array.from({ length: count }, (_, index) => ({ type: 'Noted', data: { index } }));
  await store.append(stream, events, { expectedRevision: 'any' });
}

describe('tail', () => {
  it('yields what is in the feed, then a later append, and ends when the signal fires', async () => {
    const store = memoryStore();
    await noted(store, 'a', 2);
    const abort = new AbortController();
    const seen: FeedRecord[] = [];
    const following = (async () => {
      for await (const change of followChanges(store, 1, abort.signal)) {
        seen.push(change);
        if (seen.length === 2) await noted(store, 'b', 1);
        if (seen.length === 3) abort.abort();
      }
    })();
    await following;
    expect(seen.map((change) => [change.streamId, change.position])).toEqual([
      ['a', 1],
      ['a', 2],
      ['b', 3],
    ]);
  });

  it('finds the end of the feed by reading it, and keeps only the last changes asked for', async () => {
    const store = memoryStore();
    await noted(store, 'a', 7);
    expect(await endOfFeed(store)).toBe(8);
    const last = await lastChanges(store, 1, 3);
    expect(last.changes.map((change) => change.position)).toEqual([5, 6, 7]);
    expect(last.next).toBe(8);
    expect((await lastChanges(store, 1, 10)).changes).toHaveLength(7);
    expect((await lastChanges(store, 1, 0)).changes).toEqual([]);
  });
});
