import type { CorruptionError } from '@sessionfold/core/kernel';
import type { ChangeSignal } from '@sessionfold/core/store-kit';
import type { QueryArrayConfig, QueryConfig } from 'pg';
import type { StoreConfig } from './options.js';
import type { PgPool } from './pool.js';
import type { Queries } from './queries.js';

/** What the store's parts (writes, reads, feed, status, checkpoints) share. */
export interface StoreContext {
  readonly schema: string;
  readonly config: StoreConfig;
  readonly pool: PgPool;
  readonly q: Queries;
  /** Signalled after every commit of this store object that adds to the feed: wakes its followers. */
  readonly changes: ChangeSignal;
  /** Runs a statement on the pool and answers its rows; translates what the driver throws. */
  rows<T>(query: QueryConfig | QueryArrayConfig): Promise<T[]>;
  /** Keeps `work` (a statement or a connection) among those `close` waits for before it ends the pool. */
  tracked<T>(work: Promise<T>): Promise<T>;
  /** The port's error for what the driver threw; damage is told to the observer. */
  translate(error: unknown): Error;
  /** Tells the observer about damage about to be thrown. */
  corrupt<T extends CorruptionError>(error: T): T;
  /** Checks the store is open. */
  live(): void;
  /** Checks the store is open and may write. */
  writable(): void;
}
