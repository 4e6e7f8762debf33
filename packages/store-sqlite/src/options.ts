import { InvalidInputError, type StoreObserver } from '@sessionfold/core/kernel';
import { DEFAULT_MAX_EVENT_BYTES, storeObserverOf, type ObserverCall } from '@sessionfold/core/store-kit';

/** Options of `sqliteStore`. */
export interface SqliteStoreOptions {
  /** The database file; created (mode 0600) when missing. Several processes may open the same file. */
  path: string;
  /**
   * `'FULL'` (default): an acknowledged write survives a power loss or an OS crash (the WAL is synced on
   * every commit). `'NORMAL'`: an acknowledged write survives a process crash; a power loss may undo the
   * last commits, never corrupt the file.
   */
  synchronous?: 'FULL' | 'NORMAL';
  /** How long a write waits for another connection's lock before failing with `StorageError` (default 5000 ms). */
  busyTimeoutMs?: number;
  /** Largest serialized event in bytes (default 1 MiB). */
  maxEventBytes?: number;
  /** Source of `recordedAt` (default: the system clock). */
  clock?: () => Date;
  /**
   * Open an existing, migrated database for reading only: nothing is created or migrated (a missing path,
   * an empty or unmigrated file and a newer schema are errors) and every write rejects with `StorageError`.
   * SQLite may still create its `-wal`/`-shm` side files to read a WAL database.
   */
  readOnly?: boolean;
  /** Hooks called as appends commit, group commits reach the disk, streams are compacted and damage is found; see `StoreObserver`. */
  observer?: StoreObserver;
}

/** The options after checking, with defaults filled in; frozen, so later changes by the caller do not leak in. */
export interface StoreConfig {
  readonly path: string;
  readonly synchronous: 'FULL' | 'NORMAL';
  readonly busyTimeoutMs: number;
  readonly maxEventBytes: number;
  readonly clock: () => Date;
  readonly readOnly: boolean;
  /** Calls the `observer` option's hooks, never throwing. */
  readonly observe: ObserverCall<StoreObserver>;
  /** Whether an observer was given: what it is told costs time to measure, spent only then. */
  readonly observed: boolean;
}

/** Checks `options` before anything touches the disk; throws `InvalidInputError` naming the bad option. */
export function readOptions(options: SqliteStoreOptions): StoreConfig {
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('options', '@sessionfold/store-sqlite: expected { path }');
  const { path, synchronous = 'FULL', busyTimeoutMs = 5000, maxEventBytes = DEFAULT_MAX_EVENT_BYTES, clock = () => new Date(), readOnly = false } = options;
  if (typeof path !== 'string' || path.length === 0) throw new InvalidInputError('path', '@sessionfold/store-sqlite: the option `path` is required');
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL') throw new InvalidInputError('synchronous', "expected 'FULL' or 'NORMAL'");
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) throw new InvalidInputError('busyTimeoutMs', 'expected an integer ≥ 0');
  if (!Number.isSafeInteger(maxEventBytes) || maxEventBytes < 1) throw new InvalidInputError('maxEventBytes', 'expected an integer ≥ 1');
  if (typeof clock !== 'function') throw new InvalidInputError('clock', 'expected a function returning a Date');
  if (typeof readOnly !== 'boolean') throw new InvalidInputError('readOnly', 'expected a boolean');
  const observe = storeObserverOf(options.observer);
  const observed = options.observer !== undefined && options.observer !== null;
  return Object.freeze({ path, synchronous, busyTimeoutMs, maxEventBytes, clock, readOnly, observe, observed });
}
