import { describe, expect, it } from 'vitest';
import { PagedEvents, storedEventFromRow, type EventRow } from './paged-events.js';
import { forEachItem, isReadyIterator } from './ready-items.js';

const row = (revision: number): EventRow => [revision + 10, 's', revision, 'T', `{"n":${revision}}`, null, '2026-01-01T00:00:00.000Z', 1];

/** An iterator over 1..count that counts the promises it made and whether it was returned. */
function counted(count: number, ready: boolean) {
  let next = 1;
  const seen = { nexts: 0, returned: false };
  const iterator: AsyncIterableIterator<number> & { takeReady?: () => number | undefined } = {
    next: async () => {
      seen.nexts++;
      return next <= count ? { value: next++, done: false } : { value: undefined, done: true };
    },
    return: async () => {
      seen.returned = true;
      return { value: undefined, done: true };
    },
    ...(ready ? { takeReady: () => (next <= count && next % 2 === 0 ? next++ : undefined) } : {}),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return { iterator, seen };
}

describe('forEachItem', () => {
  it('gives every item in order, taking those at hand without next()', async () => {
    const { iterator, seen } = counted(10, true);
    const items: number[] = [];
    await forEachItem(iterator, (item) => void items.push(item));
    expect(items).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Even items came from takeReady: five nexts for the odd ones, one for the end.
    expect(seen.nexts).toBe(6);
    expect(seen.returned).toBe(false);
  });

  it('works on a plain async iterable, and waits for what each returns', async () => {
    const { iterator } = counted(3, false);
    const items: number[] = [];
    await forEachItem(iterator, async (item) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      items.push(item);
    });
    expect(items).toEqual([1, 2, 3]);
  });

  it('stops after the item during which the signal fired, and returns the iterator', async () => {
    const { iterator, seen } = counted(10, true);
    const abort = new AbortController();
    const items: number[] = [];
    await forEachItem(
      iterator,
      (item) => {
        items.push(item);
        if (item === 4) abort.abort();
      },
      abort.signal,
    );
    expect(items).toEqual([1, 2, 3, 4]);
    expect(seen.returned).toBe(true);
  });

  it('returns the iterator when each throws, and rethrows', async () => {
    const { iterator, seen } = counted(10, true);
    await expect(
      forEachItem(iterator, (item) => {
        if (item === 3) throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(seen.returned).toBe(true);
  });
});

describe('PagedEvents.takeReady', () => {
  it('hands out the rows of the page at hand, then leaves the next page to next()', async () => {
    let pages = 0;
    const events = new PagedEvents([row(1), row(2)], () => (pages++ === 0 ? [row(3)] : undefined), storedEventFromRow);
    expect(isReadyIterator(events)).toBe(true);
    expect(events.takeReady()?.revision).toBe(1);
    expect(events.takeReady()?.revision).toBe(2);
    expect(events.takeReady()).toBeUndefined();
    expect((await events.next()).value?.revision).toBe(3);
    expect(events.takeReady()).toBeUndefined();
    expect((await events.next()).done).toBe(true);
  });

  it('gives the same events through forEachItem as through for await', async () => {
    const make = () =>
      new PagedEvents(
        [row(1), row(2)],
        (() => {
          let n = 2;
          return () => (n < 9 ? [row(++n), row(++n)] : undefined);
        })(),
        storedEventFromRow,
      );
    const viaForAwait: number[] = [];
    for await (const event of make()) viaForAwait.push(event.revision);
    const viaEach: number[] = [];
    await forEachItem(make(), (event) => void viaEach.push(event.revision));
    expect(viaEach).toEqual(viaForAwait);
    expect(viaEach).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
});
