import type { CompleteEventStore, EventStore, FeedRecord } from '@sessionfold/core/kernel';

/** The position after the last change already in the feed, as the store's `status()` says it. */
export async function endOfFeed(store: CompleteEventStore): Promise<number> {
  return (await store.status()).lastPosition + 1;
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
 * Every change from `fromPosition` on, then each later one as it commits, until `signal` fires: the store's
 * `follow()`. Holds the process open while it runs.
 */
export async function* followChanges(store: CompleteEventStore, fromPosition: number, signal: AbortSignal): AsyncGenerator<FeedRecord> {
  // The command lives until interrupted, also while the store is unreachable: a follower's pauses between
  // attempts then do not keep a process alive by themselves.
  const holdOpen = setInterval(() => undefined, 60_000);
  try {
    yield* store.follow({ fromPosition, signal });
  } finally {
    clearInterval(holdOpen);
  }
}
