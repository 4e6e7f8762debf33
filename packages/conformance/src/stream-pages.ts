import type { EventStore, NewEvent } from '@sessionfold/core/kernel';
import { expect } from 'vitest';

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** Batches of uneven sizes whose events cycle through types, and carry event ids and schema versions now and then. */
function batches(stream: string): NewEvent[][] {
  let n = 0;
  return [1, 700, 3, 2500, 1, 1800].map((size) =>
    Array.from({ length: size }, () => {
      n++;
      const event: NewEvent = { type: ['A', 'B', 'A', 'C'][n % 4] as string, data: { stream, n } };
      if (n % 97 === 0) event.eventId = `${stream}-${n}`;
      if (n % 89 === 0) event.schemaVersion = 2;
      return event;
    }),
  );
}

/**
 * Appends two streams batch by batch, interleaved, then reads both at once and expects every event as the feed
 * gives it: for a store whose stream reads leave out what repeats the row before (`StreamPageRows`), across its
 * pages, batches, types, event ids and schema versions, and with two reads' pages interleaving.
 */
export async function streamReadsAgreeWithFeed(store: EventStore): Promise<void> {
  const [x, y] = [batches('x'), batches('y')];
  for (let i = 0; i < x.length; i++) {
    await store.append('x', x[i] as NewEvent[], { expectedRevision: 'any' });
    await store.append('y', y[i] as NewEvent[], { expectedRevision: 'any' });
  }
  const feed = await collect(store.readAll());
  const readEvents = async (stream: string) => collect((await store.read(stream)).events);
  const [readX, readY] = await Promise.all([readEvents('x'), readEvents('y')]);
  expect(readX).toEqual(feed.filter((event) => event.streamId === 'x'));
  expect(readY).toEqual(feed.filter((event) => event.streamId === 'y'));
  expect(readX.filter((event) => event.eventId !== undefined).length).toBeGreaterThan(0);
  expect(readX.filter((event) => event.schemaVersion === 2).length).toBeGreaterThan(0);
}
