import { forEachItem } from '@sessionfold/core/kernel';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { mergeByPosition, type FeedSource } from './feed.js';

type Item = { position: number };

/** A source over `positions` (ascending) that answers some steps at once and others (and its end) after a turn of the event loop. */
function source(positions: number[], sync: boolean[], closed: Set<number>, id: number): FeedSource<Item> {
  let index = 0;
  return {
    key: positions[0] ?? Number.MAX_SAFE_INTEGER,
    next() {
      const value = index < positions.length ? { position: positions[index] as number } : undefined;
      const now = sync[index % sync.length] ?? true;
      index++;
      return now && value !== undefined ? value : new Promise((resolve) => setImmediate(() => resolve(value)));
    },
    close: async () => void closed.add(id),
  };
}

/** Splits 1..count among `owners` (owner of each position), each source ascending. */
function sources(owners: number[], sync: boolean[][], closed: Set<number>): FeedSource<Item>[] {
  const lists: number[][] = [];
  owners.forEach((owner, index) => (lists[owner] ??= []).push(index + 1));
  // flatMap skips the owners that got no position.
  return lists.flatMap((positions, id) => [source(positions, sync[id % sync.length] ?? [true], closed, id)]);
}

describe('mergeByPosition', () => {
  test.prop([
    fc.array(fc.nat(6), { minLength: 0, maxLength: 200 }),
    fc.array(fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 4 }),
  ])('gives every position once, in order, through for await and through takeReady alike', async (owners, sync) => {
    const expected = owners.map((_, index) => index + 1);
    const viaForAwait: number[] = [];
    for await (const item of mergeByPosition(() => sources(owners, sync, new Set()))) viaForAwait.push(item.position);
    const viaReady: number[] = [];
    let ended = 0;
    await forEachItem(
      mergeByPosition(
        () => sources(owners, sync, new Set()),
        () => ended++,
      ),
      (item) => void viaReady.push(item.position),
    );
    expect(viaForAwait).toEqual(expected);
    expect(viaReady).toEqual(expected);
    expect(ended).toBe(1);
  });

  it('closes every source still open and runs done once when stopped early', async () => {
    const closed = new Set<number>();
    let ended = 0;
    const abort = new AbortController();
    const seen: number[] = [];
    await forEachItem(
      mergeByPosition(
        () => sources([0, 1, 2, 0, 1, 2, 0, 1, 2], [[true, false]], closed),
        () => ended++,
      ),
      (item) => {
        seen.push(item.position);
        if (item.position === 4) abort.abort();
      },
      abort.signal,
    );
    expect(seen).toEqual([1, 2, 3, 4]);
    expect([...closed].sort()).toEqual([0, 1, 2]);
    expect(ended).toBe(1);
  });

  it('rejects with a failing source and still runs done', async () => {
    let ended = 0;
    const failing: FeedSource<Item> = { key: 1, next: () => Promise.reject(new Error('disk gone')), close: async () => undefined };
    const merge = mergeByPosition(
      () => [failing],
      () => ended++,
    );
    await expect(merge.next()).rejects.toThrow('disk gone');
    expect(ended).toBe(1);
    expect((await merge.next()).done).toBe(true);
  });
});
