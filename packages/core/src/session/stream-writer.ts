import { ConcurrencyError, InvalidInputError } from '../kernel/errors.js';
import type { StreamReducer } from '../kernel/fold.js';
import { prepareReducer, type PreparedReducer } from '../kernel/versioning.js';
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
  /** Told of every append this writer made, and of every race it lost; called synchronously, must not throw. */
  hooks?: WriterHooks;
}

/** What a `StreamWriter` tells about its work. */
export interface WriterHooks {
  /** An append committed `events` events of `calls` calls, leaving the stream at `revision`. */
  appended?(stream: StreamId, append: { revision: number; events: number; calls: number; durationMs: number }): void;
  /** An append lost a race to another writer and is about to be tried again; `attempt` counts the losses of this batch, from 1. */
  conflicted?(stream: StreamId, attempt: number): void;
}

/** A write waiting in a stream's queue: a decision to make and append, or a task that needs the stream to itself. */
type Entry<S, E> = Decide<S, E> | { kind: 'task'; run: () => Promise<void> };

/** A decision waiting in a stream's queue; `onlyNew`: it may create the stream only if the stream never existed. */
type Decide<S, E> = {
  kind: 'decide';
  decide: (state: S, at: Date) => StreamDecision<E>;
  eventId: string | undefined;
  onlyNew: boolean;
  resolve: (written: Written<S, E>) => void;
  reject: (error: unknown) => void;
};

/** What one decision of a batch came to: the state after its events, or why its call fails. */
type Outcome<S, E> = { state: S; events: readonly E[] } | { error: unknown };

/** A `create` found that its stream was deleted: a stream once deleted is never created again by it. */
export class StreamGoneError extends Error {
  readonly stream: StreamId;
  constructor(stream: StreamId) {
    super(`stream ${stream} was deleted`);
    this.stream = stream;
  }
}

/** Decisions taken into one batch at most: bounds the events of one append. */
const MAX_BATCH = 256;

/**
 * Writes to streams of one kind. Within this process, the writes of one stream wait in a queue and run one at a
 * time, so concurrent callers never race each other. The decisions waiting together are decided one after another,
 * each on the state the previous one left, and appended as one batch (one durable write for all of them); each
 * call still gets its own result or its own refusal. Across processes, every append carries the revision its
 * decisions were made on; one that lost the race is decided again on the stream as stored, after a jittered
 * back-off, a bounded number of times.
 */
export class StreamWriter<S, E extends { type: string; data: unknown }> {
  readonly #store: EventStore;
  readonly #reducer: StreamReducer<S>;
  readonly #prepared: PreparedReducer<S>;
  readonly #evolve: (state: S, event: E) => S;
  readonly #now: () => Date;
  readonly #backOff: BackOff;
  readonly #hooks: WriterHooks;
  readonly #cache: StateCache<S>;
  readonly #queues = new Map<StreamId, Entry<S, E>[]>();

  constructor(options: StreamWriterOptions<S, E>) {
    this.#store = options.store;
    this.#reducer = options.reducer;
    this.#prepared = prepareReducer(options.reducer);
    this.#evolve = options.evolve;
    this.#now = options.now;
    this.#backOff = options.backOff;
    this.#hooks = options.hooks ?? {};
    this.#cache = new StateCache(options.store, options.reducer);
  }

  /** The stream's state now (read outside the queue: it waits for no write). */
  load(stream: StreamId): Promise<CachedFold<S>> {
    return this.#cache.load(stream);
  }

  /**
   * Decides on the stream's current state and appends the decision at the revision it was decided on, after
   * every earlier write of this stream in this process (perhaps in one batch with the decisions queued next to
   * it). A refusal rejects with it and writes nothing. The state decided on is the one this process holds when
   * the append proves it current; a refusal or a no-op is always made on the stream as stored. `eventId`
   * (derived from content only) goes on the first event, making a repeated append a no-op.
   */
  mutate(stream: StreamId, decide: (state: S, at: Date) => StreamDecision<E>, eventId?: string): Promise<Written<S, E>> {
    return new Promise((resolve, reject) => this.#enqueue(stream, { kind: 'decide', decide, eventId, onlyNew: false, resolve, reject }));
  }

  /**
   * `mutate`, except that a stream that does not exist is created only if it never existed (`'never_existed'`):
   * one that was deleted rejects with `StreamGoneError` and is not written, so a name whose life ended stays
   * ended, whatever a caller holding an older view decides.
   */
  create(stream: StreamId, decide: (state: S, at: Date) => StreamDecision<E>): Promise<Written<S, E>> {
    return new Promise((resolve, reject) => this.#enqueue(stream, { kind: 'decide', decide, eventId: undefined, onlyNew: true, resolve, reject }));
  }

  /** Runs `task` when no other write of `stream` in this process is running, and before any queued after it. */
  exclusive<T>(stream: StreamId, task: () => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) =>
      this.#enqueue(stream, {
        kind: 'task',
        run: async () => {
          try {
            resolve(await task());
          } catch (error) {
            reject(error);
          }
        },
      }),
    );
  }

  /** Runs `attempt` on `stream` until it succeeds, retrying after a concurrent change (with back-off) a bounded number of times. */
  async retrying<T>(stream: StreamId, attempt: () => Promise<T>): Promise<T> {
    for (let count = 0; ; count++) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
        if (count + 1 >= this.#backOff.attempts) throw SessionHistoryError.conflict(messages.tooManyConflicts);
        this.#hooks.conflicted?.(stream, count + 1);
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

  /** Runs the stream's queue to its end: a task on its own, the decisions waiting together as one batch. */
  async #drain(stream: StreamId): Promise<void> {
    const queue = this.#queues.get(stream) as Entry<S, E>[];
    // Calls made in the same turn of the event loop queue up behind this one first, and share its batch.
    await Promise.resolve();
    for (let head = queue[0]; head; head = queue[0]) {
      if (head.kind === 'task') {
        queue.shift();
        await head.run();
      } else {
        await this.#writeBatch(stream, takeBatch(queue));
      }
    }
    this.#queues.delete(stream);
  }

  /** Writes `batch` and answers its calls; a failure fails them all, except an event the store refused. */
  async #writeBatch(stream: StreamId, batch: readonly Decide<S, E>[]): Promise<void> {
    try {
      await this.#write(stream, batch);
    } catch (error) {
      // The store refused an event of one decision (too large, say) and wrote nothing: written call by call,
      // only the call that decided that event fails.
      if (error instanceof InvalidInputError && batch.length > 1) for (const entry of batch) await this.#writeBatch(stream, [entry]);
      else for (const entry of batch) entry.reject(error);
    }
  }

  /**
   * Decides the batch on the state this process holds (a stream it never saw is taken as empty) and appends its
   * events at that state's revision, which proves the state current, so the common write reads nothing. A refusal
   * or a no-op proves nothing, so the batch is decided again on the stream as stored; so it is when the append
   * finds that another process wrote first.
   */
  async #write(stream: StreamId, batch: readonly Decide<S, E>[]): Promise<void> {
    let folded = this.#cache.peek(stream) ?? this.#empty(stream);
    let fresh = false;
    for (let losses = 0; ; ) {
      const { outcomes, state, events } = this.#decideAll(batch, folded.state);
      if (!fresh && outcomes.some((outcome) => 'error' in outcome || outcome.events.length === 0)) {
        folded = await this.#cache.load(stream);
        fresh = true;
        continue;
      }
      if (events.length === 0) return settle(batch, outcomes, folded.revision);
      try {
        return await this.#append(stream, batch, { outcomes, state, events }, folded);
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
        if (error.expected === 'never_existed' && error.actual === 0) throw new StreamGoneError(stream);
        if (++losses >= this.#backOff.attempts) throw SessionHistoryError.conflict(messages.tooManyConflicts);
        this.#hooks.conflicted?.(stream, losses);
        // A race lost on the state this process held shows only that it was behind; one lost on a state just read
        // is contention, which a back-off eases.
        if (fresh) await this.#backOff.wait(losses - 1);
        folded = await this.#cache.load(stream);
        fresh = true;
      }
    }
  }

  /** Appends the decided events as one batch at the revision they were decided on, and answers each call. */
  async #append(stream: StreamId, batch: readonly Decide<S, E>[], decided: Decided<S, E>, folded: CachedFold<S>): Promise<void> {
    // Alone in its batch (see `takeBatch`): a store answers a batch whose first event id it holds as a retry.
    const eventId = batch[0]?.eventId;
    const expectedRevision = folded.exists ? folded.revision : batch.some((entry) => entry.onlyNew) ? 'never_existed' : 'no_stream';
    const started = performance.now();
    const events = decided.events.map((event, index) => this.#newEvent(event, index === 0 ? eventId : undefined));
    const result = await this.#store.append(stream, events, { expectedRevision });
    this.#hooks.appended?.(stream, { revision: result.revision, events: events.length, calls: batch.length, durationMs: performance.now() - started });
    if (eventId === undefined) {
      this.#cache.remember(stream, { state: decided.state, revision: result.revision, exists: true, position: result.position });
      return settle(batch, decided.outcomes, folded.revision);
    }
    // An event id already stored makes the append a no-op answering with the earlier result, which need not follow
    // the state decided on: such a state is not worth keeping.
    this.#cache.forget(stream);
    settle(batch, decided.outcomes, result.revision - events.length);
  }

  /** The event as appended, naming the data version its type has now, so a later upcaster knows what it reads. */
  #newEvent(event: E, eventId: string | undefined): NewEvent {
    const version = this.#prepared.eventVersion(event.type);
    const appended: NewEvent = { type: event.type, data: event.data as NewEvent['data'] };
    if (eventId !== undefined) appended.eventId = eventId;
    if (version !== 1) appended.schemaVersion = version;
    return appended;
  }

  /** A stream with no events, as a first guess for a stream this process has not seen. */
  #empty(stream: StreamId): CachedFold<S> {
    return { state: this.#reducer.initial(stream), revision: 0, exists: false, position: undefined };
  }

  /** Decides each entry on the state the previous ones left; a refusal (or a decision that throws) changes nothing. */
  #decideAll(batch: readonly Decide<S, E>[], initial: S): Decided<S, E> {
    let state = initial;
    const events: E[] = [];
    const outcomes = batch.map((entry): Outcome<S, E> => {
      try {
        const decision = entry.decide(state, this.#now());
        if (decision instanceof SessionHistoryError) return { error: decision };
        state = decision.reduce((current, event) => this.#evolve(current, event), state);
        events.push(...decision);
        return { state, events: decision };
      } catch (error) {
        return { error };
      }
    });
    return { outcomes, state, events };
  }
}

/** The decisions of a batch: each call's outcome, the state after all of them, and all their events in order. */
type Decided<S, E> = { outcomes: readonly Outcome<S, E>[]; state: S; events: readonly E[] };

/** Answers each call of a batch: its refusal, or its state and the revision right after its events (counted on from `base`). */
function settle<S, E>(batch: readonly Decide<S, E>[], outcomes: readonly Outcome<S, E>[], base: number): void {
  let revision = base;
  batch.forEach((entry, index) => {
    const outcome = outcomes[index] as Outcome<S, E>;
    if ('error' in outcome) return entry.reject(outcome.error);
    revision += outcome.events.length;
    entry.resolve({ state: outcome.state, revision, events: outcome.events });
  });
}

/**
 * Takes the decisions at the head of the queue that share one append, at most `MAX_BATCH`: one carrying an event
 * id, or one that may only create a new stream, goes alone, and a task ends the batch.
 */
function takeBatch<S, E>(queue: Entry<S, E>[]): Decide<S, E>[] {
  let count = 0;
  for (const entry of queue) {
    if (entry.kind !== 'decide' || count === MAX_BATCH) break;
    if (entry.eventId !== undefined || entry.onlyNew) {
      if (count === 0) count = 1;
      break;
    }
    count++;
  }
  return queue.splice(0, count) as Decide<S, E>[];
}
