export { sqliteStore } from './store.js';
export type { SqliteStoreOptions } from './options.js';
