export { sqliteStore, type SqliteEventStore } from './store.js';
export type { SqliteStoreOptions } from './options.js';
