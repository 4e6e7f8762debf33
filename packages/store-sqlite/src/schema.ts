import { InvalidInputError, StorageError } from '@sessionfold/core/kernel';
import type { SqliteDatabase } from './database.js';

/** The schema this version writes; `PRAGMA user_version` of a migrated database. */
export const SCHEMA_VERSION = 2;
/** `PRAGMA application_id` of a sessionfold database ("SFol"), so another application's file is refused. */
export const APPLICATION_ID = 0x53466f6c;

/** Marks rows of `events`: application events and the two kinds of change-feed records. */
export const Kind = { event: 0, snapshot: 1, deleted: 2 } as const;

/**
 * Forward migrations: entry `n` takes a database from version `n` to `n + 1`. Never edit a released entry;
 * append a new one, so every older file can be brought forward.
 */
const MIGRATIONS: readonly string[] = [
  `
  -- The change feed and the streams' events in one table: position is the rowid, so SQLite hands out
  -- max(position) + 1 and a feed reader pages through it by primary key. kind 0 rows are events;
  -- kind 1 is a stream's $snapshot record (data = the snapshot, its only copy), kind 2 a $deleted record.
  CREATE TABLE events (
    position    INTEGER PRIMARY KEY,
    stream      TEXT    NOT NULL,
    kind        INTEGER NOT NULL,
    revision    INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    data        TEXT    NOT NULL,
    event_id    TEXT,
    -- revision of the last event of the append that carried event_id: an idempotent retry answers with it
    batch_end   INTEGER,
    recorded_at TEXT    NOT NULL
  );
  CREATE UNIQUE INDEX events_by_revision ON events (stream, revision) WHERE kind = 0;
  CREATE UNIQUE INDEX events_by_event_id ON events (stream, event_id) WHERE event_id IS NOT NULL;
  CREATE INDEX events_records ON events (stream, kind) WHERE kind <> 0;

  -- The names of the existing streams, for listing them in order. A stream's revision is not stored here:
  -- it is the last revision in events (or its $snapshot record's, when compaction left no event), so an
  -- append writes one row, and the two can never disagree.
  CREATE TABLE streams (
    stream TEXT PRIMARY KEY
  ) WITHOUT ROWID;

  -- Content-addressed bytes, kept while at least one stream owns them.
  CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY,
    bytes  BLOB NOT NULL
  );
  CREATE TABLE blob_owners (
    stream TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (stream, sha256)
  ) WITHOUT ROWID;
  CREATE INDEX blob_owners_by_sha256 ON blob_owners (sha256);
  `,
  `
  -- The version of an event's data shape (NewEvent.schemaVersion). Adding a column with a constant default
  -- rewrites no row: rows written before read as 1, and so do the $snapshot and $deleted records.
  ALTER TABLE events ADD COLUMN schema_version INTEGER NOT NULL DEFAULT 1;
  `,
];

function readVersion(db: SqliteDatabase): number {
  return Number(db.pragma('user_version', { simple: true }));
}

/** Refuses a file this version must not touch: another application's, or one written by a newer version. */
function refuseForeign(db: SqliteDatabase, path: string, version: number): void {
  const applicationId = Number(db.pragma('application_id', { simple: true }));
  if (applicationId !== 0 && applicationId !== APPLICATION_ID) {
    throw new InvalidInputError('path', `${path} is a SQLite database of another application (application_id ${applicationId}); nothing was changed`);
  }
  if (version > SCHEMA_VERSION) {
    throw new StorageError(
      `@sessionfold/store-sqlite: ${path} has schema version ${version}, written by a newer @sessionfold/store-sqlite; ` +
        `this version reads schema versions up to ${SCHEMA_VERSION}. Upgrade @sessionfold/store-sqlite to open it; nothing was changed.`,
    );
  }
  if (version === 0 && applicationId === 0) {
    const objects = Number(db.prepare("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").pluck().get());
    if (objects > 0) {
      throw new InvalidInputError('path', `${path} is a SQLite database of another application (it has tables but no sessionfold schema); nothing was changed`);
    }
  }
}

/**
 * Checks the file before anything is written: reading the header is what detects a non-SQLite file, and a
 * foreign or newer database is refused here. Returns the file's schema version.
 */
export function checkVersion(db: SqliteDatabase, path: string): number {
  // One read transaction: the version and the tables are read from the same state of the file, so another
  // process migrating meanwhile is seen as done or not begun, never as tables without a version.
  db.exec('BEGIN');
  try {
    const version = readVersion(db);
    refuseForeign(db, path, version);
    return version;
  } finally {
    if (db.inTransaction) db.exec('COMMIT');
  }
}

/**
 * Brings the schema to `SCHEMA_VERSION` in one write transaction; call after `checkVersion` and after enabling
 * WAL. Racing openers are safe: the version is read again under the write lock, so only the first one migrates.
 */
export function migrate(db: SqliteDatabase, path: string): void {
  if (readVersion(db) === SCHEMA_VERSION) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    const version = readVersion(db);
    refuseForeign(db, path, version);
    for (let next = version; next < SCHEMA_VERSION; next++) db.exec(MIGRATIONS[next] as string);
    db.pragma(`application_id = ${APPLICATION_ID}`);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
    db.exec('COMMIT');
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}
