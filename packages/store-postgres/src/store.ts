import {
  CorruptionError,
  StorageError,
  StoreClosedError,
  type CheckpointSlot,
  type CompleteEventStore,
  type FeedRecord,
  type FollowOptions,
  type StoreStatus,
  type VerifyOptions,
  type VerifyReport,
} from '@sessionfold/core/kernel';
import { ChangeSignal, validateSignalOption } from '@sessionfold/core/store-kit';
import type { PoolClient, QueryArrayConfig, QueryConfig } from 'pg';
import { createCheckpointSlot } from './checkpoint-slot.js';
import type { StoreContext } from './context.js';
import { translateError } from './errors.js';
import { createFeed } from './feed.js';
import { readOptions, type PostgresStoreOptions } from './options.js';
import { storePool } from './pool.js';
import { queriesFor } from './queries.js';
import { createReads } from './reads.js';
import { checkSchema, migrate } from './schema.js';
import { readStatus } from './status.js';
import { verifySchema } from './verify.js';
import { createWrites } from './writes.js';

/** The port with every optional member there (`CompleteEventStore`). */
export interface PostgresEventStore extends CompleteEventStore {
  /** Checks the schema in one read-only transaction; problems are named by table and key. */
  verify(options?: VerifyOptions): Promise<VerifyReport>;
  /** The feed without an end: woken by this object's commits and by NOTIFY, polling at most every second. */
  follow(options?: FollowOptions): AsyncIterable<FeedRecord>;
  /** Checkpoints in the schema's `checkpoints` table, bound to the id in `store_identity`. */
  readonly checkpoints: CheckpointSlot;
  /** The feed's last position, the sessions holding writers back, and the schema's sizes as `details`. */
  status(): Promise<StoreStatus>;
}

/**
 * An `EventStore` in PostgreSQL, shared safely by any number of processes and hosts: every write is one
 * statement (one round trip, one transaction) that checks expected revisions in SQL, and positions are
 * handed out in commit order by a counter row every write locks. Appends in flight together in one process
 * share that statement (group commit). Migrates the schema on open (unless `readOnly`); rejects with
 * `StorageError` for a schema of a newer release or of another application, or an unreachable server.
 */
export async function postgresStore(options: PostgresStoreOptions): Promise<PostgresEventStore> {
  const config = readOptions(options);
  const { schema } = config;
  const corrupt = <T extends CorruptionError>(error: T): T => {
    config.observe('corruptionFound', { error });
    return error;
  };
  const translate = (error: unknown) => {
    const translated = translateError(error, schema);
    return translated instanceof CorruptionError ? corrupt(translated) : translated;
  };
  const owned = storePool(config.connectionString, config.pool);
  const { pool } = owned;
  try {
    if (config.readOnly) await checkSchema(pool, schema);
    else await migrate(pool, schema);
  } catch (error) {
    await owned.release().catch(() => undefined);
    throw translate(error);
  }

  let closed = false;
  /**
   * Statements and connections under way. `close` waits for them before it ends the pool: a query still waiting
   * for a connection when the pool ends would never settle.
   */
  const inFlight = new Set<Promise<unknown>>();
  const ctx: StoreContext = {
    schema,
    config,
    pool,
    q: queriesFor(schema),
    changes: new ChangeSignal(),
    translate,
    corrupt,
    tracked(work) {
      inFlight.add(work);
      const forget = () => inFlight.delete(work);
      work.then(forget, forget);
      return work;
    },
    async rows<T>(query: QueryConfig | QueryArrayConfig) {
      try {
        return (await ctx.tracked(pool.query(query as QueryConfig))).rows as T[];
      } catch (error) {
        throw translate(error);
      }
    },
    live() {
      if (closed) throw new StoreClosedError(`the PostgreSQL store on schema ${schema}`);
    },
    writable() {
      ctx.live();
      if (config.readOnly) throw new StorageError(`@sessionfold/store-postgres: schema ${schema} was opened read-only.`);
    },
  };
  const { drain, ...writes } = createWrites(ctx);
  const { listener, ...feed } = createFeed(ctx);

  const store: PostgresEventStore = {
    ...writes,
    ...createReads(ctx),
    ...feed,
    checkpoints: createCheckpointSlot(ctx),

    async verify(verifyOptions) {
      ctx.live();
      const signal = validateSignalOption(verifyOptions);
      signal?.throwIfAborted();
      // A connection of its own: the check holds one read-only transaction from its first query to its last.
      let client: PoolClient;
      try {
        client = await ctx.tracked(pool.connect());
      } catch (error) {
        throw translate(error);
      }
      let broken = false;
      try {
        return await verifySchema(client, schema, signal);
      } catch (error) {
        if (signal?.aborted && error === signal.reason) throw error;
        broken = true;
        // Not `translate`: verify reports damage in its report; what it cannot read is not news for the observer.
        throw translateError(error, schema);
      } finally {
        client.release(broken ? true : undefined);
      }
    },

    status: () => readStatus(ctx, listener.listening),

    async close() {
      if (closed) return;
      // Appends already accepted are committed first; then the pool is ended, if it is the store's own.
      await drain();
      closed = true;
      ctx.changes.close();
      // Later pages and calls find the store closed; the statements already sent are answered first.
      await Promise.allSettled([...inFlight]);
      await listener.stop();
      await owned.release().catch((error: unknown) => {
        throw translate(error);
      });
    },

    [Symbol.asyncDispose]: () => store.close(),
  };
  return store;
}
