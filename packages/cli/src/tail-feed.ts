import { ChangeSignal, followFeed, type EventStore, type FeedRecord } from '@sessionfold/core/kernel';

/** How often the feed of a store without its own `follow()` is read again for changes. */
const POLL_INTERVAL_MS = 200;

/** The position after the last change already in the feed: the store's `status()` says it, or the feed is read to its end. */
export async function endOfFeed(store: EventStore): Promise<number> {
  if (store.status) return (await store.status()).lastPosition + 1;
  let last = 0;
  for await (const change of store.readAll()) last = change.position;
  return last + 1;
}

/**
 * The last `count` changes of the feed from `fromPosition`, in order, and the position after the last one read;
 * holds only those `count` changes, however long the feed.
 */
export async function lastChanges(store: EventStore, fromPosition: number, count: number): Promise<{ changes: FeedRecord[]; next: number }> {
  const ring: FeedRecord[] = [];
  let seen = 0;
  let next = fromPosition;
  for await (const change of store.readAll({ fromPosition })) {
    if (count > 0) ring[seen % count] = change;
    seen++;
    next = change.position + 1;
  }
  const kept = Math.min(seen, count);
  const changes = Array.from({ length: kept }, (_, index) => ring[(seen - kept + index) % count] as FeedRecord);
  return { changes, next };
}

/**
 * Every change from `fromPosition` on, then each later one as it commits, until `signal` fires: the store's own
 * `follow()`, or, for a store that has none (one written outside this project), its `readAll` read again every
 * 200 ms from the position after the last change printed. Holds the process open while it runs.
 */
export async function* followChanges(store: EventStore, fromPosition: number, signal: AbortSignal): AsyncGenerator<FeedRecord> {
  // The command lives until interrupted, also while the store is unreachable: a follower's pauses between
  // attempts then do not keep a process alive by themselves.
  const holdOpen = setInterval(() => undefined, 60_000);
  try {
    if (store.follow) yield* store.follow({ fromPosition, signal });
    else
      yield* followFeed(
        { readAll: (from) => store.readAll({ fromPosition: from }), changes: new ChangeSignal(), pollMs: POLL_INTERVAL_MS },
        fromPosition,
        signal,
      );
  } finally {
    clearInterval(holdOpen);
  }
}
