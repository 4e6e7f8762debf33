/**
 * `start(item)` for each item of `items`, in order, with the next item's work already started while the
 * caller handles the current one: a store's round trips for the next stream overlap printing this one.
 * At most two results are held at a time.
 */
export async function* lookahead<T, U>(items: AsyncIterable<T>, start: (item: T) => Promise<U>): AsyncGenerator<U> {
  let pending: Promise<U> | undefined;
  try {
    for await (const item of items) {
      const next = start(item);
      // Its failure is reported when the caller reaches it, not as an unhandled rejection while it waits.
      next.catch(() => undefined);
      if (pending) yield await pending;
      pending = next;
    }
    if (pending) yield await pending;
  } finally {
    pending = undefined;
  }
}
