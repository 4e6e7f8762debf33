import { InvalidInputError, type StoreObserver } from '@sessionfold/core/kernel';
import { DEFAULT_MAX_EVENT_BYTES, storeObserverOf, type ObserverCall } from '@sessionfold/core/store-kit';
import type { PgPool } from './pool.js';

/** Options of `postgresStore`: exactly one of `connectionString` and `pool`. */
export interface PostgresStoreOptions {
  /** A `postgres://` URL; the store opens its own pool on it and ends that pool on `close()`. */
  connectionString?: string;
  /** A `pg.Pool` of the application's; the store never ends it. */
  pool?: PgPool;
  /** The Postgres schema holding the store's tables (default `sessionfold`): lowercase letters, digits, `_`. */
  schema?: string;
  /** Largest serialized event in bytes (default 1 MiB). */
  maxEventBytes?: number;
  /** Source of `recordedAt` (default: the system clock). */
  clock?: () => Date;
  /** Open without migrating and refuse every write (default false). */
  readOnly?: boolean;
  /** Hooks called as appends commit, group commits finish, streams are compacted and damage is found; see `StoreObserver`. */
  observer?: StoreObserver;
}

/** The options after checking, with defaults filled in; frozen, so later changes by the caller do not leak in. */
export interface StoreConfig {
  readonly connectionString: string | undefined;
  readonly pool: PgPool | undefined;
  readonly schema: string;
  readonly maxEventBytes: number;
  readonly clock: () => Date;
  readonly readOnly: boolean;
  /** Calls the `observer` option's hooks, never throwing. */
  readonly observe: ObserverCall<StoreObserver>;
  /** Whether an observer was given: what it is told costs time to measure, spent only then. */
  readonly observed: boolean;
}

/** The default schema name. */
export const DEFAULT_SCHEMA = 'sessionfold';
/** A schema name this store accepts: it is spliced into SQL (quoted), so only a plain identifier is allowed. */
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** Checks `options` before any connection is made; throws `InvalidInputError` naming the bad option. */
export function readOptions(options: PostgresStoreOptions): StoreConfig {
  const prefix = '@sessionfold/store-postgres:';
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('options', `${prefix} expected { connectionString } or { pool }`);
  const { connectionString, pool, schema = DEFAULT_SCHEMA, maxEventBytes = DEFAULT_MAX_EVENT_BYTES, clock = () => new Date(), readOnly = false } = options;
  if ((connectionString === undefined) === (pool === undefined)) {
    throw new InvalidInputError('options', `${prefix} pass exactly one of \`connectionString\` and \`pool\``);
  }
  if (connectionString !== undefined && (typeof connectionString !== 'string' || connectionString.length === 0)) {
    throw new InvalidInputError('connectionString', `${prefix} expected a non-empty postgres:// URL`);
  }
  if (pool !== undefined && (typeof pool !== 'object' || pool === null || typeof pool.query !== 'function' || typeof pool.connect !== 'function')) {
    throw new InvalidInputError('pool', `${prefix} expected a pg.Pool`);
  }
  if (typeof schema !== 'string' || !SCHEMA_PATTERN.test(schema)) {
    throw new InvalidInputError('schema', `${prefix} ${JSON.stringify(schema)} is not a schema name this store accepts (${SCHEMA_PATTERN.source})`);
  }
  if (!Number.isSafeInteger(maxEventBytes) || maxEventBytes < 1) throw new InvalidInputError('maxEventBytes', 'expected an integer ≥ 1');
  if (typeof clock !== 'function') throw new InvalidInputError('clock', 'expected a function returning a Date');
  if (typeof readOnly !== 'boolean') throw new InvalidInputError('readOnly', 'expected a boolean');
  const observe = storeObserverOf(options.observer);
  const observed = options.observer !== undefined && options.observer !== null;
  return Object.freeze({ connectionString, pool, schema, maxEventBytes, clock, readOnly, observe, observed });
}
