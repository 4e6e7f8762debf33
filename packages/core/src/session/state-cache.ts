import { CorruptionError } from '../kernel/errors.js';
import type { StreamReducer } from '../kernel/fold.js';
import type { EventStore, RecordedEvent, StreamId, StreamRead } from '../kernel/port.js';
import { prepareReducer, type PreparedReducer } from '../kernel/versioning.js';

/** A folded stream as the cache holds it. `position` is that of the last event folded, when known. */
export interface CachedFold<S> {
  state: S;
  revision: number;
  exists: boolean;
  position: number | undefined;
}

/**
 * Folded states of the most recently used streams, brought up to date by reading only the events from
 * the cached revision on. The first event read is the last one folded before: if its position differs,
 * the stream was deleted and written again meanwhile, and it is folded from scratch.
 */
export class StateCache<S> {
  readonly #store: EventStore;
  /** Migrates older snapshots and upcasts older events, so the reducer sees only current shapes. */
  readonly #reducer: PreparedReducer<S>;
  readonly #capacity: number;
  readonly #entries = new Map<StreamId, CachedFold<S>>();

  constructor(store: EventStore, reducer: StreamReducer<S>, capacity = 64) {
    this.#store = store;
    this.#reducer = prepareReducer(reducer);
    this.#capacity = capacity;
  }

  /** The stream's state now: the cached state plus the new events, or folded from the store. */
  async load(stream: StreamId): Promise<CachedFold<S>> {
    const cached = this.#entries.get(stream);
    const advanced = cached ? await this.#advance(stream, cached) : undefined;
    const fresh = advanced ?? (await this.#foldRead(stream, await this.#store.read(stream)));
    this.remember(stream, fresh);
    return fresh;
  }

  /** The state last loaded or remembered, as it was then (the store is not asked), if the cache still holds it. */
  peek(stream: StreamId): CachedFold<S> | undefined {
    return this.#entries.get(stream);
  }

  /** Records a state the caller computed itself, e.g. right after its own append. */
  remember(stream: StreamId, fold: CachedFold<S>): void {
    this.#entries.delete(stream);
    // A missing stream is not worth a place: a writer takes a stream it holds nothing of as empty anyway.
    if (!fold.exists) return;
    this.#entries.set(stream, fold);
    if (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value as StreamId);
  }

  /** Forgets a stream, e.g. after deleting it. */
  forget(stream: StreamId): void {
    this.#entries.delete(stream);
  }

  async #advance(stream: StreamId, cached: CachedFold<S>): Promise<CachedFold<S> | undefined> {
    if (cached.position === undefined) return undefined;
    const read = await this.#store.read(stream, { fromRevision: cached.revision });
    if (read.revision < cached.revision) return undefined;
    // A snapshot covering the cached revision holds the whole state: nothing cached is needed.
    if (read.snapshot) return this.#foldRead(stream, read);
    let { state, revision, position } = cached;
    let overlapSeen = false;
    for await (const event of read.events) {
      if (!overlapSeen) {
        if (event.revision !== cached.revision || event.position !== cached.position) return undefined;
        overlapSeen = true;
        continue;
      }
      if (event.revision !== revision + 1) return undefined;
      state = this.#reducer.apply(state, event);
      revision = event.revision;
      position = event.position;
    }
    return overlapSeen ? { state, revision, exists: true, position } : undefined;
  }

  async #foldRead(stream: StreamId, read: StreamRead): Promise<CachedFold<S>> {
    let state: S;
    let revision = 0;
    if (read.snapshot) {
      state = this.#reducer.restore(stream, read.snapshot);
      revision = read.snapshot.revision;
    } else {
      state = this.#reducer.reducer.initial(stream);
    }
    let position: number | undefined;
    for await (const event of read.events as AsyncIterable<RecordedEvent>) {
      if (event.revision !== revision + 1) {
        throw new CorruptionError(`stream ${stream}`, undefined, `revision ${event.revision} follows revision ${revision}`);
      }
      state = this.#reducer.apply(state, event);
      revision = event.revision;
      position = event.position;
    }
    return { state, revision, exists: revision > 0, position };
  }
}
