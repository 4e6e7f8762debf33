export { sqliteStore, type SqliteStoreOptions } from './store.js';
