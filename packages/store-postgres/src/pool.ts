import pg from 'pg';

/** A node-postgres pool (`pg.Pool`), the only part of the driver the store's options name. */
export type PgPool = pg.Pool;

/** The pool the store runs on, and whether the store owns it (made it from a connection string) and so ends it. */
export interface StorePool {
  readonly pool: PgPool;
  /** Ends the pool if the store made it; an application's pool is only left alone. */
  release(): Promise<void>;
}

/**
 * Opens the pool for `connectionString`, or adopts `given`. An idle connection that the server drops (a
 * restart, `pg_terminate_backend`) makes the pool emit 'error', which would end the process without a
 * listener: the store listens while it is open, and the next query simply takes a new connection. A pool the
 * store makes lets the process exit while its connections are idle, so a script that never closes the store
 * still ends; an application's pool keeps its own settings.
 */
export function storePool(connectionString: string | undefined, given: PgPool | undefined): StorePool {
  const owned = given === undefined;
  const pool = given ?? new pg.Pool({ connectionString, max: 10, allowExitOnIdle: true });
  const ignore = () => undefined;
  pool.on('error', ignore);
  return {
    pool,
    async release() {
      if (owned) await pool.end();
      else pool.off('error', ignore);
    },
  };
}
