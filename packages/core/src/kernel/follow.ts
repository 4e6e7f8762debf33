import { InvalidInputError, type StorageError, StoreClosedError } from './errors.js';
import type { ObserverCall, StoreObserver } from './observer.js';
import type { RecordedEvent } from './port.js';
import { validateReadAllOptions, validateSignalOption } from './validate.js';

/** Why a wait for changes ended. */
export type WakeReason = 'changed' | 'timeout' | 'aborted' | 'closed';

/**
 * Tells followers in this process that the store changed. `notify` is one counter increment when nobody waits,
 * so a store can call it once per commit on its hot path; waiters compare the counter, so a change made
 * between a follower's read and its wait is never missed.
 */
export class ChangeSignal {
  #version = 0;
  #closed = false;
  readonly #waiters = new Set<(reason: WakeReason) => void>();

  /** Increases with every `notify`. */
  get version(): number {
    return this.#version;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Something was committed. */
  notify(): void {
    this.#version++;
    if (this.#waiters.size === 0) return;
    this.#wake('changed');
  }

  /** The store closed: every wait ends, and every later one ends at once. */
  close(): void {
    this.#closed = true;
    this.#wake('closed');
  }

  /**
   * Resolves once the version moves past `seen`, after `timeoutMs`, on abort or on close, whichever comes first.
   * With `keepAlive` false the timeout does not keep the process alive.
   */
  wait(seen: number, timeoutMs: number, signal?: AbortSignal, keepAlive = true): Promise<WakeReason> {
    if (this.#version !== seen && !this.#closed && !signal?.aborted) return Promise.resolve('changed');
    return this.#sleep(timeoutMs, signal, true, keepAlive);
  }

  /**
   * Resolves after `ms`, on abort or on close, whichever comes first; commits do not end it. Its timer does not
   * keep the process alive: it only spaces out retries, which must not pin a process that has nothing else to do.
   */
  pause(ms: number, signal?: AbortSignal): Promise<WakeReason> {
    return this.#sleep(ms, signal, false, false);
  }

  #sleep(ms: number, signal: AbortSignal | undefined, onChange: boolean, ref: boolean): Promise<WakeReason> {
    if (this.#closed) return Promise.resolve('closed');
    if (signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const done = (reason: WakeReason) => {
        if (reason === 'changed' && !onChange) return;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#waiters.delete(done);
        resolve(reason);
      };
      const onAbort = () => done('aborted');
      const timer = setTimeout(() => done('timeout'), ms);
      if (!ref) timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(done);
    });
  }

  #wake(reason: WakeReason): void {
    for (const waiter of [...this.#waiters]) waiter(reason);
  }
}

/** What `followFeed` needs from a store. */
export interface FollowSource {
  /** The store's `readAll` from a position (it may throw `StoreClosedError` once the store closed). */
  readAll(fromPosition: number): AsyncIterable<RecordedEvent>;
  /** Commits made through this store object. */
  changes: ChangeSignal;
  /** How often to look for changes made elsewhere: the longest a change by another process waits to be seen. */
  pollMs: number;
  /**
   * Asked every `pollMs` while nothing changed in this process: whether another process may have committed since
   * the last call (a cheap probe such as SQLite's `data_version`). Without it, every poll reads the feed again.
   */
  changedElsewhere?(): boolean | Promise<boolean>;
  /**
   * Whether a failure of a read or a probe may pass when tried again (a lost connection, a server restarting, a
   * busy lock): the follower then retries with back-off from the position after the last record it yielded,
   * instead of ending. Without it, every failure but the store's close ends the follow.
   */
  transient?(error: unknown): error is StorageError;
  /** Hears each failed attempt of an outage and its end (`followInterrupted`, `followResumed`). */
  observe?: ObserverCall<StoreObserver>;
}

/** The first pause after a transient failure; each failure in a row doubles it, up to `FOLLOW_RETRY_MAX_MS`. */
const FOLLOW_RETRY_MIN_MS = 100;
/** The longest pause between two attempts of a follower in an outage. */
const FOLLOW_RETRY_MAX_MS = 5000;

/** Checks `follow`'s options once: `fromPosition` as for `readAll`, `signal` an `AbortSignal` when given, `keepAlive` a boolean. */
export function validateFollowOptions(options: unknown): { fromPosition: number; signal: AbortSignal | undefined; keepAlive: boolean } {
  const fromPosition = validateReadAllOptions(options);
  const keepAlive: unknown = (options as { keepAlive?: unknown } | undefined)?.keepAlive;
  if (keepAlive !== undefined && typeof keepAlive !== 'boolean') throw new InvalidInputError('keepAlive', 'expected a boolean');
  return { fromPosition, signal: validateSignalOption(options), keepAlive: keepAlive ?? true };
}

/**
 * The change feed without an end: every record from `fromPosition` once, in position order, then each later
 * commit as it becomes visible, until `signal` fires or the store closes (the iteration then returns). It
 * builds on `readAll` never skipping a change: the next read starts right after the last record yielded. A
 * failure the source calls `transient` is retried after a pause (100 ms, doubling up to 5 s) from that same
 * position, each failed attempt told to `observe` as `followInterrupted` and the first success as
 * `followResumed`; any other failure ends the iteration with it. With `keepAlive` false its waits do not keep the
 * process alive (see `FollowOptions`); the pauses of an outage never do.
 */
export async function* followFeed(source: FollowSource, fromPosition: number, signal?: AbortSignal, keepAlive = true): AsyncGenerator<RecordedEvent> {
  let next = fromPosition;
  const ended = () => signal?.aborted === true || source.changes.closed;
  /** The outage under way: when its first failure happened and how many attempts failed since. */
  let outage: { since: number; attempts: number } | undefined;
  const recovered = () => {
    if (outage === undefined) return;
    source.observe?.('followResumed', { attempts: outage.attempts, outageMs: Date.now() - outage.since });
    outage = undefined;
  };
  /** Ends the follow (false), or reports `error` and waits out the back-off before the next attempt (true). */
  const retried = async (error: unknown): Promise<boolean> => {
    if (source.changes.closed || error instanceof StoreClosedError) return false;
    if (source.transient?.(error) !== true) throw error;
    const now = Date.now();
    outage ??= { since: now, attempts: 0 };
    outage.attempts++;
    source.observe?.('followInterrupted', { error, attempts: outage.attempts, sinceMs: now - outage.since });
    const pauseMs = Math.min(FOLLOW_RETRY_MAX_MS, FOLLOW_RETRY_MIN_MS * 2 ** Math.min(outage.attempts - 1, 16));
    return (await source.changes.pause(pauseMs, signal)) === 'timeout';
  };
  for (;;) {
    if (ended()) return;
    // Taken before the read: a commit landing during the read moves the version and wakes the wait at once.
    const seen = source.changes.version;
    try {
      for await (const record of source.readAll(next)) {
        if (ended()) return;
        recovered();
        yield record;
        next = record.position + 1;
      }
      recovered();
    } catch (error) {
      if (await retried(error)) continue;
      return;
    }
    for (;;) {
      const reason = await source.changes.wait(seen, source.pollMs, signal, keepAlive);
      if (reason === 'aborted' || reason === 'closed') return;
      if (reason === 'changed' || !source.changedElsewhere) break;
      let elsewhere: boolean;
      try {
        elsewhere = await source.changedElsewhere();
      } catch (error) {
        if (await retried(error)) break;
        return;
      }
      if (elsewhere) break;
    }
  }
}
