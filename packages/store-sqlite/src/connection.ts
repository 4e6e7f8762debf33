import { chmodSync, existsSync } from 'node:fs';
import { StorageError } from '@sessionfold/core/kernel';
import { openDatabase, type SqliteDatabase } from './database.js';
import type { StoreConfig } from './options.js';
import { checkVersion, migrate, SCHEMA_VERSION } from './schema.js';

/**
 * Opens the store's connection: refuses a file it must not touch before writing anything, then enables WAL,
 * sets the durability level and brings the schema up to date. A file it creates is private to its owner.
 * Driver errors are thrown as they are; the caller translates them.
 */
export function openConnection(config: StoreConfig): SqliteDatabase {
  if (config.readOnly) return openReadOnly(config);
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

/**
 * Opens an existing database without writing to it: no file is created for a missing path and nothing is
 * migrated, so a file this version would have to change first is refused instead.
 */
function openReadOnly(config: StoreConfig): SqliteDatabase {
  if (!existsSync(config.path)) {
    throw new StorageError(`@sessionfold/store-sqlite: ${config.path} does not exist; a read-only store opens only an existing database, nothing was created`);
  }
  const db = openDatabase(config.path, config.busyTimeoutMs, true);
  try {
    const version = checkVersion(db, config.path);
    if (version < SCHEMA_VERSION) {
      throw new StorageError(
        `@sessionfold/store-sqlite: ${config.path} has schema version ${version}, older than this version's ${SCHEMA_VERSION} ` +
          `(${version === 0 ? 'an empty or never-opened database' : 'written by an older release'}); open it once without readOnly to migrate it. Nothing was changed.`,
      );
    }
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
