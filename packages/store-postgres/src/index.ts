export { postgresStore, type PostgresEventStore } from './store.js';
export type { PostgresStoreOptions } from './options.js';
export type { PgPool } from './pool.js';
