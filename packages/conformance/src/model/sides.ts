import { expect } from 'vitest';
import type { EventStore, ExpectedRevision, NewEvent } from '@sessionfold/core/kernel';
import { type FeedConsumer, viewsFromReads } from '../feed-consumer.js';
import { listBlobs, listStreams, readStream } from '../support.js';
import { feedWithRanks, recordShape } from './outcome.js';

/** The reference side of a model run: the in-memory store. */
export interface ModelSide {
  store: EventStore;
  /** Every append sent so far, as sent, so a later command can retry one. */
  readonly sent: Array<{ stream: string; events: readonly NewEvent[]; expectedRevision: ExpectedRevision }>;
}

/** The store under test, plus change-feed consumers that keep their place across commands. */
export interface RealSide {
  store: EventStore;
  readonly consumers: FeedConsumer[];
  readonly reopen: ((store: EventStore) => Promise<EventStore>) | undefined;
}

/** The stream names model runs use: a shared prefix, `-`, `_` and case differences catch sloppy prefix queries. */
export const STREAMS = ['s', 's-1', 's_1', 'S'] as const;

/** Compares everything both stores show: the feed by rank, the listing, every stream's read and blobs, and the consumers' views. */
export async function compareEverything(model: ModelSide, real: RealSide, when: string): Promise<void> {
  const [m, r] = [await feedWithRanks(model.store), await feedWithRanks(real.store)];
  expect(r.feed.map(recordShape), `readAll ${when}`).toEqual(m.feed.map(recordShape));
  expect(await listStreams(real.store), `streams() ${when}`).toEqual(await listStreams(model.store));
  for (const stream of STREAMS) {
    const [mr, rr] = [await readStream(model.store, stream), await readStream(real.store, stream)];
    const shape = (read: typeof mr, rank: (p: number) => unknown) => ({
      revision: read.revision,
      snapshot: read.snapshot,
      events: read.events.map((e) => ({ ...recordShape(e), rank: rank(e.position) })),
    });
    expect(shape(rr, r.rank), `read(${stream}) ${when}`).toEqual(shape(mr, m.rank));
    expect(await listBlobs(real.store, stream), `blobs(${stream}) ${when}`).toEqual(await listBlobs(model.store, stream));
  }
  const truth = await viewsFromReads(real.store);
  for (const [index, consumer] of real.consumers.entries()) {
    await consumer.catchUp(real.store);
    expect(consumer.views(), `consumer ${index} caught up ${when}`).toEqual(truth);
  }
}
