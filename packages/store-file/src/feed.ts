/**
 * One ordered input of the change feed. `key` is a lower bound of the position of the next record it will
 * give, so an input need not be opened (no file descriptor) until it is the lowest one.
 */
export interface FeedSource<T extends { position: number }> {
  key: number;
  /** The next record (position ≥ the current key), or undefined when the source is exhausted; a record at hand may come without a promise. */
  next(): T | Promise<T | undefined>;
  /** Releases what the source holds when the merge stops early. */
  close(): Promise<void>;
  /** Starts fetching the first record ahead of need (opening its file), for a source the merge will reach soon. */
  prefetch?(): void;
}

/**
 * Sources fetched ahead of the merge, in key order: a feed over many short journals would otherwise wait for one
 * open and one read after another; a few in flight keep the disk (and the thread pool) busy meanwhile.
 */
const READ_AHEAD = 64;

/**
 * Merges sources by position with a binary heap. A source is advanced only when it holds the lowest key,
 * and a fetched record is emitted only once its position is the lowest key of all. `open` makes the sources
 * when iteration starts (not when this is called), and `done` runs once it ends, however it ends.
 */
export async function* mergeByPosition<T extends { position: number }>(open: () => FeedSource<T>[], done?: () => void): AsyncGenerator<T> {
  let sources: FeedSource<T>[];
  try {
    sources = open();
  } catch (error) {
    done?.();
    throw error;
  }
  const heap: { key: number; source: FeedSource<T>; record: T | undefined }[] = sources.map((source) => ({
    key: source.key,
    source,
    record: undefined,
  }));
  const less = (a: number, b: number) => (heap[a] as { key: number }).key < (heap[b] as { key: number }).key;
  const swap = (a: number, b: number) => {
    const t = heap[a] as (typeof heap)[number];
    heap[a] = heap[b] as (typeof heap)[number];
    heap[b] = t;
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && less(l, m)) m = l;
      if (r < heap.length && less(r, m)) m = r;
      if (m === i) return;
      swap(i, m);
      i = m;
    }
  };
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i);
  // Sources start in about the order of their first keys: keep the next few of that order fetching.
  const order = sources.filter((source) => source.prefetch).sort((a, b) => a.key - b.key);
  const started = new Set<FeedSource<T>>();
  let ahead = 0;
  try {
    while (heap.length > 0) {
      const top = heap[0] as (typeof heap)[number];
      // A held record is the lowest key of all, every other key being a lower bound: safe to emit.
      if (top.record) yield top.record;
      if (!started.has(top.source)) {
        started.add(top.source);
        for (; ahead < order.length && ahead < started.size + READ_AHEAD; ahead++) (order[ahead] as FeedSource<T>).prefetch?.();
      }
      const step = top.source.next();
      const record = step instanceof Promise ? await step : step;
      top.record = record;
      if (record) {
        top.key = record.position;
        down(0);
        continue;
      }
      const last = heap.pop() as (typeof heap)[number];
      if (heap.length > 0) {
        heap[0] = last;
        down(0);
      }
    }
  } finally {
    try {
      await Promise.all(heap.map((entry) => entry.source.close()));
    } finally {
      done?.();
    }
  }
}
