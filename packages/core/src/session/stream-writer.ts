import { ConcurrencyError, InvalidInputError } from '../kernel/errors.js';
import type { StreamReducer } from '../kernel/fold.js';
import { prepareReducer, type PreparedReducer } from '../kernel/versioning.js';
import type { AppendResult, EventStore, NewEvent, StreamId } from '../kernel/port.js';
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
  /** Appends tried per call on a freshly read state before it fails with `state_conflict` (one more when the first was decided on the state this process held). */
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
  /** Told of every append this writer made, and of every race it lost; called synchronously, must not throw. */
  hooks?: WriterHooks;
}

/** What a `StreamWriter` tells about its work. */
export interface WriterHooks {
  /** An append committed `events` events of `decisions` calls, leaving the stream at `revision`. */
  appended?(stream: StreamId, append: { revision: number; events: number; decisions: number; durationMs: number }): void;
  /** An append lost a race to another writer and is about to be tried again; `attempt` counts the losses of this batch, from 1. */
  conflicted?(stream: StreamId, attempt: number): void;
  /**
   * An append without an event id stored `events`, the last of them at `revision` and `position` (so it was no
   * retry answered with an earlier result). `decidedAt` is when the batch's last decision was made: `append`
   * does not return the store's commit time.
   */
  recorded?(stream: StreamId, append: OwnAppend): void;
}

/** What a writer appended, as its `recorded` hook hears of it. */
export interface OwnAppend {
  events: readonly NewEvent[];
  revision: number;
  position: number;
  decidedAt: Date;
  /** The stream's state after these events, as the writer folded them (never changed in place). */
  state: unknown;
  /**
   * The feed position of the last event in the state the writer decided on (undefined when it does not know it,
   * or the stream was empty): with the revision, it tells whether that state is the fold of the history another
   * holder of the stream saw (positions are never reused, so a stream deleted and written again differs there).
   */
  basePosition: number | undefined;
}

/**
 * A write waiting in a stream's queue: a decision to make on the stream's state and append, or a task that
 * needs the stream to itself. Decisions stay data until they run, so consecutive ones can be taken together.
 */
type Entry<S, E> = Decide<S, E> | ({ kind: 'task'; task: () => Promise<unknown> } & Settle);

/** How a queued write answers its caller. */
type Settle = { resolve: (value: never) => void; reject: (error: unknown) => void };

/** A decision waiting in a stream's queue; `onlyNew`: it may create the stream only if the stream never existed. */
type Decide<S, E> = { kind: 'decide'; decide: (state: S, at: Date) => StreamDecision<E>; eventId: string | undefined; onlyNew: boolean } & Settle;

/** A `create` found that its stream was deleted: a stream once deleted is never created again by it. */
export class StreamGoneError extends Error {
  readonly stream: StreamId;
  constructor(stream: StreamId) {
    super(`stream ${stream} was deleted`);
    this.stream = stream;
  }
}

/**
 * Writes to streams of one kind. Within this process, the writes of one stream wait in a queue and run one
 * at a time, so concurrent callers never race each other: each decides on the state the previous one left.
 * Decisions waiting together are decided one after another and appended as one batch (one durable write
 * for all of them); each call still gets its own result or its own refusal.
 * Across processes, every append carries the revision its decisions were made on; one that lost the race
 * is decided again on the new state after a jittered back-off, a bounded number of times.
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
    this.#cache = new StateCache(options.store, options.reducer, options.cacheSize);
  }

  /** The stream's state now (read outside the queue: it waits for no write). */
  load(stream: StreamId): Promise<CachedFold<S>> {
    return this.#cache.load(stream);
  }

  /**
   * Decides on the stream's current state and appends the decision at the revision it was decided on, after
   * every earlier write of this stream in this process (perhaps in one batch with the decisions queued
   * next to it). A refusal rejects with it and writes nothing. The state decided on is the one this process
   * holds when the append proves it current; a refusal or a no-op is always made on the stream as stored.
   * `eventId` (derived from content only) goes on the first event, making a repeated append a no-op.
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
    return new Promise((resolve, reject) => this.#enqueue(stream, { kind: 'task', task, resolve, reject }));
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

  /** Runs the stream's queue to its end: a task on its own, consecutive decisions together (see `#decideBatch`). */
  async #drain(stream: StreamId): Promise<void> {
    const queue = this.#queues.get(stream) as Entry<S, E>[];
    // Calls made in the same turn of the event loop queue up behind this one first, and share its batch.
    await Promise.resolve();
    for (let entry = queue[0]; entry; entry = queue[0]) {
      if (entry.kind === 'task') {
        try {
          entry.resolve((await entry.task()) as never);
        } catch (error) {
          entry.reject(error);
        }
        queue.shift();
      } else {
        await this.#decideBatch(stream, queue, MAX_BATCH);
      }
    }
    this.#queues.delete(stream);
  }

  /**
   * Takes the decisions at the head of the queue (at most `limit`), decides them one after another, each on
   * the state the previous one left, appends all their events as one batch, and settles each call with its
   * own outcome: its state and revision right after its events, or its refusal (which adds no events).
   * The batch's append proves every decision was made on the stored state; when another writer got in
   * first, every decision of the batch is made again on the new state.
   */
  async #decideBatch(stream: StreamId, queue: Entry<S, E>[], limit: number): Promise<void> {
    let batch: Decide<S, E>[] = [];
    try {
      // First on the state this process last saw (its own appends keep it current; a stream it never saw is
      // taken as empty): the append's expected revision proves that state current, so nothing is read. A
      // refusal or a no-op proves nothing, so those are decided again on the stream as read from the store.
      // (The proof is the revision alone: a stream another process deleted and wrote again up to the very
      // revision held here would pass it. Session ids are never used twice by starts; only a caller that
      // registers a completed session's id again makes such a stream.)
      let read = false;
      for (let conflicts = 0, losses = 0; ; ) {
        const folded = read ? await this.#cache.load(stream) : (this.#cache.peek(stream) ?? this.#empty(stream));
        batch = takeBatch(queue, limit);
        const decided = this.#decideAll(batch, folded.state);
        if (!read && decided.some((outcome) => 'error' in outcome || outcome.events.length === 0)) {
          read = true;
          continue;
        }
        const events = decided.flatMap((outcome) => ('events' in outcome ? outcome.events : []));
        if (events.length === 0) return this.#settle(queue, batch, decided, folded.revision);
        // A batch whose first event id is stored already is answered as a retry of that earlier append, so
        // a decision carrying an id is always appended on its own (see `takeBatch`).
        const eventId = batch.length === 1 ? batch[0]?.eventId : undefined;
        const newEvents = events.map((event, index): NewEvent => {
          // Events name the data version their type has now, so a later upcaster knows what it reads.
          const version = this.#prepared.eventVersion(event.type);
          const appended: NewEvent = { type: event.type, data: event.data as NewEvent['data'] };
          if (index === 0 && eventId !== undefined) appended.eventId = eventId;
          if (version !== 1) appended.schemaVersion = version;
          return appended;
        });
        let result: AppendResult;
        const started = performance.now();
        try {
          const expectedRevision = folded.exists ? folded.revision : batch.some((entry) => entry.onlyNew) ? 'never_existed' : 'no_stream';
          result = await this.#store.append(stream, newEvents, { expectedRevision });
        } catch (error) {
          if (error instanceof ConcurrencyError && error.expected === 'never_existed' && error.actual === 0) {
            // The stream was deleted: the decisions that may only create it fail; the others are decided again.
            for (const entry of batch) {
              if (!entry.onlyNew) continue;
              queue.splice(queue.indexOf(entry), 1);
              entry.reject(new StreamGoneError(stream));
            }
            batch = [];
            this.#cache.forget(stream);
            read = true;
            continue;
          }
          if (error instanceof ConcurrencyError) {
            // Another process wrote since this process last looked: read the stream and decide again. Only a
            // race lost on a state just read is worth a back-off (and counts towards giving up).
            if (read && conflicts + 1 >= this.#backOff.attempts) throw SessionHistoryError.conflict(messages.tooManyConflicts);
            this.#hooks.conflicted?.(stream, ++losses);
            if (read) await this.#backOff.wait(conflicts++);
            this.#cache.forget(stream);
            read = true;
            continue;
          }
          if (error instanceof InvalidInputError && batch.length > 1) {
            // The store refused an event of one decision (too large, say): nothing was written. Append the
            // batch's decisions one by one, so that only the call that decided that event fails.
            for (let count = batch.length; count > 0; count--) await this.#decideBatch(stream, queue, 1);
            return;
          }
          throw error;
        }
        this.#hooks.appended?.(stream, { revision: result.revision, events: events.length, decisions: batch.length, durationMs: performance.now() - started });
        const state = decided.reduce((current, outcome) => ('state' in outcome ? outcome.state : current), folded.state);
        if (eventId === undefined)
          this.#hooks.recorded?.(stream, {
            events: newEvents,
            revision: result.revision,
            position: result.position,
            decidedAt: lastDecidedAt(decided),
            state,
            basePosition: folded.position,
          });
        // An event id already stored turns the append into a no-op answering with the earlier result, which
        // need not follow the state decided on: such a state is not worth keeping.
        if (eventId === undefined) this.#cache.remember(stream, { state, revision: result.revision, exists: true, position: result.position });
        else this.#cache.forget(stream);
        return this.#settle(queue, batch, decided, eventId === undefined ? folded.revision : result.revision - events.length);
      }
    } catch (error) {
      const failed = batch.length > 0 ? batch : queue.slice(0, 1);
      queue.splice(0, failed.length);
      for (const entry of failed) entry.reject(error);
    }
  }

  /** A stream with no events, as a first guess for a stream this process has not seen. */
  #empty(stream: StreamId): CachedFold<S> {
    return { state: this.#reducer.initial(stream), revision: 0, exists: false, position: undefined };
  }

  /** Decides each entry on the state the previous ones left; a refusal (or a decision that throws) changes nothing. */
  #decideAll(batch: readonly Decide<S, E>[], initial: S): Outcome<S, E>[] {
    let state = initial;
    return batch.map((entry) => {
      try {
        const at = this.#now();
        const decision = entry.decide(state, at);
        if (decision instanceof SessionHistoryError) return { error: decision };
        state = decision.reduce((current, event) => this.#evolve(current, event), state);
        return { state, events: decision, at };
      } catch (error) {
        return { error };
      }
    });
  }

  /** Removes the batch from the queue and answers each call: revisions count on from `revision`, the batch's base. */
  #settle(queue: Entry<S, E>[], batch: readonly Decide<S, E>[], decided: readonly Outcome<S, E>[], revision: number): void {
    queue.splice(0, batch.length);
    let current = revision;
    batch.forEach((entry, index) => {
      const outcome = decided[index] as Outcome<S, E>;
      if ('error' in outcome) return entry.reject(outcome.error);
      current += outcome.events.length;
      entry.resolve({ state: outcome.state, revision: current, events: outcome.events } satisfies Written<S, E> as never);
    });
  }
}

/** Decisions taken into one batch at most: bounds the events of one append. */
const MAX_BATCH = 256;

/** What one decision of a batch came to: the state after its events, or why its call fails. */
type Outcome<S, E> = { state: S; events: readonly E[]; at: Date } | { error: unknown };

/** The time of the last decision of a batch that appended something (so one that decided). */
function lastDecidedAt<S, E>(decided: readonly Outcome<S, E>[]): Date {
  for (let index = decided.length - 1; index >= 0; index--) {
    const outcome = decided[index] as Outcome<S, E>;
    if ('at' in outcome) return outcome.at;
  }
  throw new Error('a batch that appended events has no decision');
}

/**
 * The decisions at the head of the queue that can share one append, at most `limit`: a decision carrying an
 * event id goes alone, and a task ends the batch.
 */
function takeBatch<S, E>(queue: readonly Entry<S, E>[], limit: number): Decide<S, E>[] {
  const batch: Decide<S, E>[] = [];
  for (const entry of queue) {
    if (entry.kind !== 'decide' || batch.length >= limit) break;
    if (entry.eventId !== undefined) {
      if (batch.length === 0) batch.push(entry);
      break;
    }
    batch.push(entry);
  }
  return batch;
}
