import type { SqliteDatabase, SqliteStatement } from './database.js';
import { Kind } from './schema.js';

/** Every statement the store runs, prepared once per connection. */
export interface Statements {
  begin: SqliteStatement;
  beginImmediate: SqliteStatement;
  commit: SqliteStatement;
  rollback: SqliteStatement;
  savepoint: SqliteStatement;
  release: SqliteStatement;
  rollbackToSavepoint: SqliteStatement;
  /** (stream, stream) → the stream's revision (0 when it does not exist), plucked */
  headRevision: SqliteStatement;
  /** (stream) → 1 when the stream was deleted at some time (a `$deleted` record of it is kept), else 0, plucked */
  wasDeleted: SqliteStatement;
  /** (stream) */
  insertStream: SqliteStatement;
  /** (stream) */
  deleteStream: SqliteStatement;
  /** (stream, eventId) → { revision, position, batch_end } */
  findEventId: SqliteStatement;
  /** (stream, revision, type, data, eventId, batchEnd, recordedAt, schemaVersion) */
  insertEvent: SqliteStatement;
  /** (stream, kind, revision, type, data, recordedAt) */
  insertRecord: SqliteStatement;
  /** (stream) → { revision, data } of the $snapshot record */
  snapshotRecord: SqliteStatement;
  /** (stream, revision): drop the events a snapshot covers */
  deleteEventsThrough: SqliteStatement;
  /** (stream) */
  deleteAllEvents: SqliteStatement;
  /** (stream, kind, keepPosition) */
  deleteRecordsOfKind: SqliteStatement;
  /** (stream, keepPosition) */
  deleteAllRecords: SqliteStatement;
  /**
   * (offset, type, recordedAt, stream, fromRevision, toRevision, maxPosition, limit) → [revision, data, meta], raw:
   * see `STREAM_PAGE_COLUMNS`; the reader builds the EventRow
   */
  streamPage: SqliteStatement;
  /** (fromPosition, toPosition, limit) → EventRow, raw */
  feedPage: SqliteStatement;
  /** () → largest position, plucked */
  lastPosition: SqliteStatement;
  /** (fromName, limit) → { stream, revision }, names ≥ fromName */
  streamsFrom: SqliteStatement;
  /** (afterName, limit) → { stream, revision }, names > afterName */
  streamsAfter: SqliteStatement;
  /** (sha256, bytes) */
  insertBlob: SqliteStatement;
  /** (stream, sha256) */
  insertBlobOwner: SqliteStatement;
  /** (sha256) → bytes, plucked */
  blobBytes: SqliteStatement;
  /** (stream) → sha256, plucked */
  ownedBlobs: SqliteStatement;
  /** (stream, stream): blobs no other stream owns */
  deleteOrphanBlobs: SqliteStatement;
  /** (stream) */
  deleteBlobOwners: SqliteStatement;
}

/**
 * Selects a stream's $snapshot record. `kind <> 0` lets SQLite use the partial index of records: the
 * planner only uses a partial index when the query repeats its condition, and `kind = 1` alone scans.
 */
const IS_SNAPSHOT_RECORD = `kind <> ${Kind.event} AND kind = ${Kind.snapshot}`;

/**
 * A stream's revision: its last event's, else its $snapshot record's (compaction may have left no event),
 * else 0. Both lookups are index seeks; `coalesce` stops at the first that finds something.
 */
const HEAD_OF = (first: string, second: string) =>
  `coalesce((SELECT max(revision) FROM events WHERE stream = ${first} AND kind = ${Kind.event}),
            (SELECT revision FROM events WHERE stream = ${second} AND ${IS_SNAPSHOT_RECORD}), 0)`;

/** The columns of `EventRow`, in its order. */
const EVENT_COLUMNS = 'position, stream, revision, type, data, event_id, recorded_at, schema_version';

/** A stream read's columns: `StreamPageRow` (revision, data, and the rest only where it does not repeat what is passed). */
const STREAM_PAGE_COLUMNS =
  'revision, data, CASE WHEN position - revision = ? AND type = ? AND recorded_at = ? AND event_id IS NULL AND schema_version = 1 THEN NULL ' +
  'ELSE json_array(position - revision, type, event_id, recorded_at, schema_version) END';

/** Prepares every statement of the store on `db` (the schema must exist). */
export function prepareStatements(db: SqliteDatabase): Statements {
  return {
    begin: db.prepare('BEGIN'),
    beginImmediate: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    savepoint: db.prepare('SAVEPOINT store_job'),
    release: db.prepare('RELEASE store_job'),
    rollbackToSavepoint: db.prepare('ROLLBACK TO store_job'),
    headRevision: db.prepare(`SELECT ${HEAD_OF('?', '?')}`).pluck(),
    // `kind <> event` lets the partial index of records serve it.
    wasDeleted: db.prepare(`SELECT EXISTS (SELECT 1 FROM events WHERE stream = ? AND kind <> ${Kind.event} AND kind = ${Kind.deleted})`).pluck(),
    insertStream: db.prepare('INSERT INTO streams (stream) VALUES (?)'),
    deleteStream: db.prepare('DELETE FROM streams WHERE stream = ?'),
    findEventId: db.prepare('SELECT revision, position, batch_end FROM events WHERE stream = ? AND event_id = ?'),
    insertEvent: db.prepare(
      `INSERT INTO events (stream, kind, revision, type, data, event_id, batch_end, recorded_at, schema_version) VALUES (?, ${Kind.event}, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertRecord: db.prepare('INSERT INTO events (stream, kind, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?, ?)'),
    snapshotRecord: db.prepare(`SELECT revision, data FROM events WHERE stream = ? AND ${IS_SNAPSHOT_RECORD}`),
    deleteEventsThrough: db.prepare(`DELETE FROM events WHERE stream = ? AND kind = ${Kind.event} AND revision <= ?`),
    deleteAllEvents: db.prepare(`DELETE FROM events WHERE stream = ? AND kind = ${Kind.event}`),
    deleteRecordsOfKind: db.prepare(`DELETE FROM events WHERE stream = ? AND kind <> ${Kind.event} AND kind = ? AND position <> ?`),
    deleteAllRecords: db.prepare(`DELETE FROM events WHERE stream = ? AND kind <> ${Kind.event} AND position <> ?`),
    streamPage: db
      .prepare(
        `SELECT ${STREAM_PAGE_COLUMNS} FROM events WHERE stream = ? AND kind = ${Kind.event} AND revision >= ? AND revision <= ? AND position <= ?
       ORDER BY revision LIMIT ?`,
      )
      .raw(),
    feedPage: db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE position >= ? AND position <= ? ORDER BY position LIMIT ?`).raw(),
    lastPosition: db.prepare('SELECT max(position) FROM events').pluck(),
    streamsFrom: db.prepare(`SELECT stream, ${HEAD_OF('s.stream', 's.stream')} AS revision FROM streams AS s WHERE stream >= ? ORDER BY stream LIMIT ?`),
    streamsAfter: db.prepare(`SELECT stream, ${HEAD_OF('s.stream', 's.stream')} AS revision FROM streams AS s WHERE stream > ? ORDER BY stream LIMIT ?`),
    insertBlob: db.prepare('INSERT INTO blobs (sha256, bytes) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING'),
    insertBlobOwner: db.prepare('INSERT INTO blob_owners (stream, sha256) VALUES (?, ?) ON CONFLICT DO NOTHING'),
    blobBytes: db.prepare('SELECT bytes FROM blobs WHERE sha256 = ?').pluck(),
    ownedBlobs: db.prepare('SELECT sha256 FROM blob_owners WHERE stream = ? ORDER BY sha256').pluck(),
    deleteOrphanBlobs: db.prepare(
      `DELETE FROM blobs WHERE sha256 IN (
         SELECT mine.sha256 FROM blob_owners AS mine
         WHERE mine.stream = ?
           AND NOT EXISTS (SELECT 1 FROM blob_owners AS other WHERE other.sha256 = mine.sha256 AND other.stream <> ?))`,
    ),
    deleteBlobOwners: db.prepare('DELETE FROM blob_owners WHERE stream = ?'),
  };
}
