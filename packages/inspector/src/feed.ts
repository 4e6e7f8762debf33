import type { EventStore, FeedRecord } from '@sessionfold/core';

/** How often a store without `follow` is polled, and how often the page hears the store's last position. */
export const POLL_MS = 1000;

/** The change feed from `fromPosition` on, without an end: the store's own `follow`, or `readAll` polled. */
export async function* changes(store: EventStore, fromPosition: number, signal: AbortSignal): AsyncGenerator<FeedRecord> {
  if (typeof store.follow === 'function') {
    yield* store.follow({ fromPosition, signal });
    return;
  }
  let next = fromPosition;
  while (!signal.aborted) {
    for await (const record of store.readAll({ fromPosition: next })) {
      if (signal.aborted) return;
      next = record.position + 1;
      yield record;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, POLL_MS);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}

/** The store's last position: from its `status`, else the last record of the feed (0: empty). */
export async function lastPosition(store: EventStore): Promise<number> {
  if (typeof store.status === 'function') return (await store.status()).lastPosition;
  let last = 0;
  for await (const record of store.readAll()) last = record.position;
  return last;
}
