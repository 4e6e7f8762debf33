import { type CorruptionError, InvalidInputError, type StorageError } from './errors.js';
import type { StreamId } from './port.js';
import type { ValidatedEvent } from './validate.js';

/**
 * Hooks a store calls as things happen (`fileStore({ observer })`, `sqliteStore`, `postgresStore`), for an
 * application's logger and metrics; every hook is optional. Hooks are called synchronously; one that throws,
 * or returns a promise that rejects, is ignored — an observer never breaks a store call. Stores log nothing
 * by themselves.
 */
export interface StoreObserver {
  /** An append is durable: `events` events of `bytes` serialized bytes on `stream`, `durationMs` from the call to its acknowledgement. */
  appendCommitted?(append: { stream: StreamId; events: number; bytes: number; durationMs: number }): void;
  /**
   * A group commit reached the disk: `appends` calls with `events` events and `bytes` bytes in all, made durable by
   * one sync (fdatasync or transaction commit) that took `syncMs`.
   */
  flushed?(flush: { appends: number; events: number; bytes: number; syncMs: number }): void;
  /** A compaction of `stream` finished: it dropped `droppedEvents` events and now holds a snapshot at `revision`. */
  compacted?(compaction: { stream: StreamId; revision: number; droppedEvents: number; durationMs: number }): void;
  /** A read or an open found damage; the store also throws `error` to the caller it concerns. */
  corruptionFound?(corruption: { error: CorruptionError }): void;
  /**
   * A `follow` met a failure that may pass (a lost connection, a server restarting, a busy lock) and tries again
   * after a pause: `attempts` failed in a row so far, the first `sinceMs` ago. The iteration goes on.
   */
  followInterrupted?(outage: { error: StorageError; attempts: number; sinceMs: number }): void;
  /** A `follow` read again after `attempts` failed attempts over `outageMs`, from where it was. */
  followResumed?(resumed: { attempts: number; outageMs: number }): void;
}

const STORE_HOOKS = ['appendCommitted', 'flushed', 'compacted', 'corruptionFound', 'followInterrupted', 'followResumed'] as const;

/** Calls an observer's hook, if it has one, never letting it throw or reject into the caller. */
export type ObserverCall<O> = <K extends keyof O>(hook: K, value: O[K] extends ((value: infer V) => unknown) | undefined ? V : never) => void;

/**
 * Checks an `observer` option (an object whose listed hooks, where present, are functions) and returns a caller
 * of its hooks that never throws. Throws `InvalidInputError` naming `field` for anything else.
 */
export function observerCaller<O extends object>(option: unknown, hooks: readonly (keyof O & string)[], field = 'observer'): ObserverCall<O> {
  if (option === undefined || option === null) return () => undefined;
  if (
    typeof option !== 'object' ||
    hooks.some((hook) => (option as Record<string, unknown>)[hook] !== undefined && typeof (option as Record<string, unknown>)[hook] !== 'function')
  ) {
    throw new InvalidInputError(field, `expected an object whose hooks (${hooks.join(', ')}) are functions`);
  }
  const observer = option as Record<string, unknown>;
  return (hook, value) => {
    try {
      const returned: unknown = (observer[hook as string] as ((value: unknown) => unknown) | undefined)?.call(observer, value);
      // A hook's own failure is the application's to handle; it must not become an unhandled rejection here.
      if (typeof (returned as Promise<unknown> | undefined)?.then === 'function') (returned as Promise<unknown>).then(undefined, () => undefined);
    } catch {
      // An observer never breaks a call.
    }
  };
}

/** Checks a store's `observer` option; see `StoreObserver`. */
export function storeObserverOf(option: unknown): ObserverCall<StoreObserver> {
  return observerCaller<StoreObserver>(option, STORE_HOOKS);
}

/** The bytes a store reports for validated events (`appendCommitted`, `flushed`): their serialized data and type, in UTF-8. */
export function eventBytes(events: readonly ValidatedEvent[]): number {
  return events.reduce((sum, event) => sum + Buffer.byteLength(event.dataJson) + Buffer.byteLength(event.type), 0);
}
