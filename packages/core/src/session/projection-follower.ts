import type { FollowOptions } from '../kernel/capabilities.js';
import type { RecordedEvent } from '../kernel/port.js';
import { SessionHistoryError } from './errors.js';
import type { SessionProjection } from './projection.js';

/** Records read ahead of the projection before the loop waits for it to apply them. */
const MAX_READ_AHEAD = 4096;

/**
 * How long the loop lets changes gather after the first of a batch before it reads on: one feed read then
 * covers every commit of that time, instead of one read per commit (this service's own calls commit often,
 * and never need the loop to see them: their lookups catch up).
 */
const GATHER_MS = 50;

/** How long the loop waits before following again after the store's feed failed. */
const RETRY_MS = 1000;

/**
 * Applies the store's `follow` to the projection in the background, so another process's writes are seen without
 * a call asking for them. Records go through the projection's queue (never beside a catch-up or a compaction),
 * in batches of whatever arrived while the previous batch was applied, reading the feed at most once per
 * `GATHER_MS` while commits keep coming. A failure is reported and the follow
 * starts again from the projection's position a second later; `close` ends the loop and waits for it. Nothing
 * of the loop keeps the process alive: a script that never closes the service still exits.
 */
export class ProjectionFollower {
  readonly #follow: (options: FollowOptions) => AsyncIterable<RecordedEvent>;
  readonly #projection: SessionProjection;
  readonly #failed: (error: SessionHistoryError) => void;
  readonly #closing = new AbortController();
  readonly #done: Promise<void>;

  /** `follow` is the store's `follow`; the loop starts at once, from the projection's position. */
  constructor(follow: (options: FollowOptions) => AsyncIterable<RecordedEvent>, projection: SessionProjection, failed: (error: SessionHistoryError) => void) {
    this.#follow = follow;
    this.#projection = projection;
    this.#failed = failed;
    this.#done = this.#run();
  }

  /** Stops following and resolves once the loop has ended (a batch being applied is finished or abandoned). */
  async close(): Promise<void> {
    this.#closing.abort();
    await this.#done;
  }

  async #run(): Promise<void> {
    const closing = this.#closing.signal;
    while (!closing.aborted) {
      try {
        await this.#followOnce();
        // The follow ended without an error: closed by us or by the store's close.
        return;
      } catch (error) {
        if (closing.aborted) return;
        this.#failed(error instanceof SessionHistoryError ? error : SessionHistoryError.internal(error));
        await pause(RETRY_MS, closing);
      }
    }
  }

  async #followOnce(): Promise<void> {
    const failing = new AbortController();
    const signal = AbortSignal.any([this.#closing.signal, failing.signal]);
    const pending: RecordedEvent[] = [];
    let failure: unknown;
    let applying: Promise<void> | undefined;
    const take = (): RecordedEvent[] => {
      const batch = pending.splice(0);
      // Cleared in the same step that finds nothing left, so the next record read starts a new batch.
      if (batch.length === 0) applying = undefined;
      return batch;
    };
    for await (const record of this.#follow({ fromPosition: this.#projection.position() + 1, signal, keepAlive: false })) {
      pending.push(record);
      const starts = applying === undefined;
      applying ??= this.#projection.applyFollowed(take).catch((error: unknown) => {
        failure = error;
        failing.abort();
      });
      if (pending.length >= MAX_READ_AHEAD) await applying;
      else if (starts) await pause(GATHER_MS, signal);
    }
    await applying;
    if (failure !== undefined) throw failure;
  }
}

/** Resolves after `ms`, or at once when `signal` fires; the wait does not keep the process alive. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
