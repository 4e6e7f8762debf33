import { ConcurrencyError } from '../kernel/errors.js';
import type { StreamReducer } from '../kernel/fold.js';
import type { EventStore, NewEvent, StreamId } from '../kernel/port.js';
import { SessionHistoryError, messages } from './errors.js';
import { StateCache, type CachedFold } from './state-cache.js';

/** What a decision returns: the events to append (none: nothing to do), or why the call is refused. */
export type StreamDecision<E> = readonly E[] | SessionHistoryError;

/** The outcome of a mutation: the state after it, its revision, and the events it appended (maybe none). */
export interface Written<S, E> {
  state: S;
  revision: number;
  events: readonly E[];
}

/** How often and how patiently a write is tried again after another process changed its stream. */
export interface RetryPolicy {
  /** Appends tried per call before it fails with `state_conflict`. */
  attempts: number;
  /** The back-off before the second attempt is drawn from [0, this) ms; the bound doubles per attempt... */
  baseDelayMs: number;
  /** ...up to this bound. */
  maxDelayMs: number;
}

/** The default: 25 attempts, back-off bounds from 2 ms doubling to 100 ms (a bit over a second in all, on average). */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({ attempts: 25, baseDelayMs: 2, maxDelayMs: 100 });

/** Waits between attempts: full jitter over an exponentially growing bound, drawn from an injected source. */
export class BackOff {
  readonly #policy: RetryPolicy;
  readonly #random: () => number;

  constructor(policy: RetryPolicy, random: () => number) {
    this.#policy = policy;
    this.#random = random;
  }

  /** The number of attempts a write gets. */
  get attempts(): number {
    return this.#policy.attempts;
  }

  /** Waits before attempt `attempt + 1` (0-based `attempt` is the one that just lost a race). */
  async wait(attempt: number): Promise<void> {
    const draw = this.#random();
    if (typeof draw !== 'number' || !(draw >= 0 && draw < 1)) throw new TypeError(`the random source returned ${String(draw)}, not a number in [0, 1)`);
    const bound = Math.min(this.#policy.maxDelayMs, this.#policy.baseDelayMs * 2 ** attempt);
    const delay = draw * bound;
    // Two processes that collided at once would collide again if they came back at the same moment.
    if (delay >= 1) await new Promise((resolve) => setTimeout(resolve, delay));
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Options of a `StreamWriter`. */
export interface StreamWriterOptions<S, E> {
  store: EventStore;
  /** Folds the stream as stored. */
  reducer: StreamReducer<S>;
  /** Applies an event this writer decided (already well-formed: no parsing). */
  evolve: (state: S, event: E) => S;
  /** The time every decision is made at. */
  now: () => Date;
  backOff: BackOff;
  /** How many folded streams to keep (default 64). */
  cacheSize?: number;
}

/**
 * A write waiting in a stream's queue: a decision to make on the stream's state and append, or a task that
 * needs the stream to itself. Decisions stay data until they run, so consecutive ones can be taken together.
 */
type Entry<S, E> = { resolve: (value: never) => void; reject: (error: unknown) => void } & (
  | { kind: 'decide'; decide: (state: S, at: Date) => StreamDecision<E>; eventId: string | undefined }
  | { kind: 'task'; task: () => Promise<unknown> }
);

/**
 * Writes to streams of one kind. Within this process, the writes of one stream wait in a queue and run one
 * at a time, so concurrent callers never race each other: each decides on the state the previous one left.
 * Across processes, every append carries the revision its decision was made on; one that lost the race
 * is decided again on the new state after a jittered back-off, a bounded number of times.
 */
export class StreamWriter<S, E extends { type: string; data: unknown }> {
  readonly #store: EventStore;
  readonly #evolve: (state: S, event: E) => S;
  readonly #now: () => Date;
  readonly #backOff: BackOff;
  readonly #cache: StateCache<S>;
  readonly #queues = new Map<StreamId, Entry<S, E>[]>();

  constructor(options: StreamWriterOptions<S, E>) {
    this.#store = options.store;
    this.#evolve = options.evolve;
    this.#now = options.now;
    this.#backOff = options.backOff;
    this.#cache = new StateCache(options.store, options.reducer, options.cacheSize);
  }

  /** The stream's state now (read outside the queue: it waits for no write). */
  load(stream: StreamId): Promise<CachedFold<S>> {
    return this.#cache.load(stream);
  }

  /**
   * Decides on the stream's current state and appends the decision at the revision it was decided on, after
   * every earlier write of this stream in this process. A refusal rejects with it and writes nothing.
   * `eventId` (derived from content only) goes on the first event, making a repeated append a no-op.
   */
  mutate(stream: StreamId, decide: (state: S, at: Date) => StreamDecision<E>, eventId?: string): Promise<Written<S, E>> {
    return new Promise((resolve, reject) => this.#enqueue(stream, { kind: 'decide', decide, eventId, resolve, reject }));
  }

  /** Runs `task` when no other write of `stream` in this process is running, and before any queued after it. */
  exclusive<T>(stream: StreamId, task: () => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => this.#enqueue(stream, { kind: 'task', task, resolve, reject }));
  }

  /** Runs `attempt` until it succeeds, retrying after a concurrent change (with back-off) a bounded number of times. */
  async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    for (let count = 0; ; count++) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
        if (count + 1 >= this.#backOff.attempts) throw SessionHistoryError.conflict(messages.tooManyConflicts);
        await this.#backOff.wait(count);
      }
    }
  }

  /** Forgets the cached state of a stream, e.g. after deleting it. */
  forget(stream: StreamId): void {
    this.#cache.forget(stream);
  }

  #enqueue(stream: StreamId, entry: Entry<S, E>): void {
    const queue = this.#queues.get(stream);
    if (queue) {
      queue.push(entry);
      return;
    }
    this.#queues.set(stream, [entry]);
    void this.#drain(stream);
  }

  /**
   * Runs the stream's queue to its end, one entry at a time. (Consecutive decisions could also be decided
   * one after another on one state and appended as one batch: each needs only the state the previous left.)
   */
  async #drain(stream: StreamId): Promise<void> {
    const queue = this.#queues.get(stream) as Entry<S, E>[];
    for (let entry = queue[0]; entry; entry = queue[0]) {
      try {
        const value = entry.kind === 'decide' ? await this.#decideAndAppend(stream, entry.decide, entry.eventId) : await entry.task();
        entry.resolve(value as never);
      } catch (error) {
        entry.reject(error);
      }
      queue.shift();
    }
    this.#queues.delete(stream);
  }

  #decideAndAppend(stream: StreamId, decide: (state: S, at: Date) => StreamDecision<E>, eventId: string | undefined): Promise<Written<S, E>> {
    return this.retrying(async () => {
      const folded = await this.#cache.load(stream);
      const decision = decide(folded.state, this.#now());
      if (decision instanceof SessionHistoryError) throw decision;
      if (decision.length === 0) return { state: folded.state, revision: folded.revision, events: [] };
      const batch = decision.map(
        (event, index): NewEvent => ({
          type: event.type,
          data: event.data as NewEvent['data'],
          ...(index === 0 && eventId !== undefined ? { eventId } : {}),
        }),
      );
      const result = await this.#store.append(stream, batch, { expectedRevision: folded.exists ? folded.revision : 'no_stream' });
      const state = decision.reduce((current, event) => this.#evolve(current, event), folded.state);
      // An event id already stored turns the append into a no-op answering with the earlier result, which
      // need not follow the state decided on: such a state is not worth keeping.
      if (eventId === undefined) this.#cache.remember(stream, { state, revision: result.revision, exists: true, position: result.position });
      else this.#cache.forget(stream);
      return { state, revision: result.revision, events: decision };
    });
  }
}
