import type { ReadyIterator } from '@sessionfold/core/kernel';

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

/** A source in the merge's heap: its key, and its next record once fetched (then the key is that record's position). */
interface HeapEntry<T extends { position: number }> {
  key: number;
  source: FeedSource<T>;
  record: T | undefined;
}

const DONE: IteratorResult<never> = { value: undefined, done: true };

/**
 * Merges sources by position with a binary heap. A source is advanced only when it holds the lowest key,
 * and a fetched record is emitted only once its position is the lowest key of all. `open` makes the sources
 * when iteration starts (not when this is called), and `done` runs once it ends, however it ends. Records at
 * hand are also given by `takeReady` without a promise.
 */
export function mergeByPosition<T extends { position: number }>(open: () => FeedSource<T>[], done?: () => void): AsyncIterableIterator<T> & ReadyIterator<T> {
  return new PositionMerge(open, done);
}

class PositionMerge<T extends { position: number }> implements AsyncIterableIterator<T>, ReadyIterator<T> {
  readonly #open: () => FeedSource<T>[];
  readonly #done: (() => void) | undefined;
  #heap: HeapEntry<T>[] | undefined;
  /** Sources with a prefetch, in about the order the merge reaches them (their first keys). */
  #order: FeedSource<T>[] = [];
  readonly #started = new Set<FeedSource<T>>();
  #ahead = 0;
  /** The fetch of the top source's next record that `next()` must await before the merge goes on. */
  #waiting: { entry: HeapEntry<T>; step: Promise<T | undefined> } | undefined;
  #finished = false;

  constructor(open: () => FeedSource<T>[], done: (() => void) | undefined) {
    this.#open = open;
    this.#done = done;
  }

  takeReady(): T | undefined {
    return this.#finished ? undefined : this.#advance();
  }

  async next(): Promise<IteratorResult<T>> {
    try {
      for (;;) {
        if (this.#finished) return DONE;
        const record = this.#advance();
        if (record !== undefined) return { value: record, done: false };
        const waiting = this.#waiting;
        if (waiting === undefined) break;
        this.#waiting = undefined;
        this.#settle(waiting.entry, await waiting.step);
      }
    } catch (error) {
      await this.#finish();
      throw error;
    }
    await this.#finish();
    return DONE;
  }

  async return(): Promise<IteratorResult<T>> {
    await this.#finish();
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /**
   * Moves the merge on without waiting: the next record, or undefined when the top source's fetch must be awaited
   * (`#waiting`) or every source is exhausted.
   */
  #advance(): T | undefined {
    if (this.#waiting) return undefined;
    const heap = this.#heap ?? this.#init();
    while (heap.length > 0) {
      const top = heap[0] as HeapEntry<T>;
      const held = top.record;
      // A held record is the lowest key of all, every other key being a lower bound: safe to emit. The key stays a
      // lower bound of the source's next record.
      if (held !== undefined) {
        top.record = undefined;
        return held;
      }
      if (!this.#started.has(top.source)) {
        this.#started.add(top.source);
        const order = this.#order;
        for (; this.#ahead < order.length && this.#ahead < this.#started.size + READ_AHEAD; this.#ahead++) (order[this.#ahead] as FeedSource<T>).prefetch?.();
      }
      const step = top.source.next();
      if (step instanceof Promise) {
        this.#waiting = { entry: top, step };
        return undefined;
      }
      this.#settle(top, step);
    }
    return undefined;
  }

  /** Takes the fetched next record of the top source `entry` (undefined: the source is exhausted). */
  #settle(entry: HeapEntry<T>, record: T | undefined): void {
    const heap = this.#heap as HeapEntry<T>[];
    if (record !== undefined) {
      entry.record = record;
      entry.key = record.position;
      this.#down(0);
      return;
    }
    const last = heap.pop() as HeapEntry<T>;
    if (heap.length > 0) {
      heap[0] = last;
      this.#down(0);
    }
  }

  #init(): HeapEntry<T>[] {
    let sources: FeedSource<T>[];
    try {
      sources = this.#open();
    } catch (error) {
      this.#heap = [];
      this.#finished = true;
      this.#done?.();
      throw error;
    }
    const heap = sources.map((source) => ({ key: source.key, source, record: undefined }));
    this.#heap = heap;
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) this.#down(i);
    // Sources start in about the order of their first keys: keep the next few of that order fetching.
    this.#order = sources.filter((source) => source.prefetch).sort((a, b) => a.key - b.key);
    return heap;
  }

  #down(at: number): void {
    const heap = this.#heap as HeapEntry<T>[];
    const entry = heap[at] as HeapEntry<T>;
    let i = at;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= heap.length) break;
      const r = l + 1;
      const child = r < heap.length && (heap[r] as HeapEntry<T>).key < (heap[l] as HeapEntry<T>).key ? r : l;
      if ((heap[child] as HeapEntry<T>).key >= entry.key) break;
      heap[i] = heap[child] as HeapEntry<T>;
      i = child;
    }
    heap[i] = entry;
  }

  async #finish(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    const heap = this.#heap ?? [];
    this.#heap = [];
    const waiting = this.#waiting;
    this.#waiting = undefined;
    try {
      // A fetch in flight lands before its source closes.
      await waiting?.step.catch(() => undefined);
      await Promise.all(heap.map((entry) => entry.source.close()));
    } finally {
      this.#done?.();
    }
  }
}
