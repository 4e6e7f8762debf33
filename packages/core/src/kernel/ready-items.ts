/**
 * An async iterator that can also hand out an item it already holds, without a promise: a store's reads decode a
 * chunk or a page at once, and a consumer of millions of events spent a tenth of its time resuming after one
 * `await` per event.
 */
export interface ReadyIterator<T> extends AsyncIterator<T> {
  /** The item `next()` would give next if it is at hand now, else undefined (then call `next()`). */
  takeReady(): T | undefined;
}

/** Whether `iterator` is a `ReadyIterator`. */
export function isReadyIterator<T>(iterator: AsyncIterator<T>): iterator is ReadyIterator<T> {
  return typeof (iterator as Partial<ReadyIterator<T>>).takeReady === 'function';
}

/**
 * Calls `each` for every item of `items` in order, as `for await` would, taking the items the iterator holds
 * (`takeReady`) without a promise each. `each` returns a promise only when it must wait (a full output, say).
 * Stops once `signal` fires (checked after each item); the iterator is returned early on a stop or an error.
 * Items must not be `undefined` (events and records never are).
 */
export async function forEachItem<T>(items: AsyncIterable<T>, each: (item: T) => void | Promise<void>, signal?: AbortSignal): Promise<void> {
  const iterator = items[Symbol.asyncIterator]();
  const ready = isReadyIterator(iterator) ? iterator : undefined;
  let ended = false;
  try {
    for (;;) {
      let item = ready?.takeReady();
      if (item === undefined) {
        const result = await iterator.next();
        if (result.done) {
          ended = true;
          return;
        }
        item = result.value;
      }
      const wait = each(item);
      if (wait) await wait;
      if (signal?.aborted) return;
    }
  } finally {
    if (!ended) await iterator.return?.();
  }
}
