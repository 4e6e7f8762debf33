import { chmodSync, existsSync } from 'node:fs';
import { openDatabase, type SqliteDatabase } from './database.js';
import type { StoreConfig } from './options.js';
import { checkVersion, migrate } from './schema.js';

/**
 * Opens the store's connection: refuses a file it must not touch before writing anything, then enables WAL,
 * sets the durability level and brings the schema up to date. A file it creates is private to its owner.
 * Driver errors are thrown as they are; the caller translates them.
 */
export function openConnection(config: StoreConfig): SqliteDatabase {
  const created = !existsSync(config.path);
  const db = openDatabase(config.path, config.busyTimeoutMs);
  try {
    checkVersion(db, config.path);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${config.synchronous}`);
    // Savepoints keep copies of the pages they change in a sub-journal; memory is the cheap place for it.
    db.pragma('temp_store = MEMORY');
    migrate(db, config.path);
    // SQLite gives the -wal and -shm files the mode of the database file.
    if (created) chmodSync(config.path, 0o600);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
