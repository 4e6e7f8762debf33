import { closeSync, existsSync, fchmodSync, openSync } from 'node:fs';
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
  createPrivately(config.path);
  const db = openDatabase(config.path, config.busyTimeoutMs);
  try {
    checkVersion(db, config.path);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${config.synchronous}`);
    // Savepoints keep copies of the pages they change in a sub-journal; memory is the cheap place for it.
    db.pragma('temp_store = MEMORY');
    migrate(db, config.path);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Creates a missing database file, and its `-wal` and `-shm` files, empty and owner-only before SQLite opens
 * them, so none is ever readable by others under any umask (`process.umask` is process-wide and unavailable in
 * workers). SQLite takes an empty file as a new database, an empty WAL and an empty index as none yet.
 * An existing database (another process won the race, or it was there) is left as it is.
 */
function createPrivately(path: string): void {
  if (!createEmpty(path)) return;
  createEmpty(`${path}-wal`);
  createEmpty(`${path}-shm`);
}

/** Creates `path` empty with mode 0600 (whatever the umask); false when something is already there. */
function createEmpty(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
  return true;
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
