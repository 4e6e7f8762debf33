import { statSync } from 'node:fs';
import type { StoreStatus } from '@sessionfold/core/kernel';
import type { SqliteDatabase, SqliteStatement } from './database.js';
import { sqliteCode } from './errors.js';
import { Kind } from './schema.js';

/** What `readStatus` needs from the store. */
export interface StatusContext {
  readonly db: SqliteDatabase;
  readonly path: string;
  readonly readOnly: boolean;
  readonly busyTimeoutMs: number;
  /** `SELECT max(position) FROM events`, plucked. */
  readonly lastPosition: SqliteStatement;
}

/**
 * The store's status from its own connection: the feed's last position, and as details the file's page count
 * and size, the WAL's size, the journal mode, the schema version, the number of streams, whether another
 * connection holds the write lock now, and compaction's state: the streams with a snapshot, the revisions their
 * snapshots cover (read from the snapshot records alone) and the bytes of free pages, which compaction and
 * deletions leave for later writes to reuse. SQLite does not say who holds the lock, so `holdingBack` is always empty.
 */
export function readStatus(ctx: StatusContext): StoreStatus {
  const { db } = ctx;
  const pragma = (name: string) => db.pragma(name, { simple: true }) as number | string;
  const pageSize = Number(pragma('page_size'));
  const pageCount = Number(pragma('page_count'));
  // `kind <> event` first: it is the condition of the index of the snapshot and deletion records.
  const [compactedStreams, compactedEvents] = db
    .prepare(`SELECT count(*), coalesce(sum(revision), 0) FROM events WHERE kind <> ${Kind.event} AND kind = ${Kind.snapshot}`)
    .raw()
    .get() as [number, number];
  return {
    kind: 'sqlite',
    lastPosition: Number(ctx.lastPosition.get() ?? 0),
    holdingBack: [],
    details: {
      path: ctx.path,
      readOnly: ctx.readOnly,
      schemaVersion: Number(pragma('user_version')),
      journalMode: String(pragma('journal_mode')),
      pageSize,
      pageCount,
      fileBytes: pageSize * pageCount,
      walBytes: sizeOf(`${ctx.path}-wal`),
      streams: Number(db.prepare('SELECT count(*) FROM streams').pluck().get()),
      writeLocked: ctx.readOnly ? null : writeLocked(db, ctx.busyTimeoutMs),
      compactedStreams: Number(compactedStreams),
      compactedEvents: Number(compactedEvents),
      freeBytes: pageSize * Number(pragma('freelist_count')),
    },
  };
}

/** Bytes of the file at `path`, 0 when there is none (a WAL checkpointed away, or never made). */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * Whether another connection holds the write lock: takes it without waiting (`BEGIN IMMEDIATE` with no busy
 * timeout) and lets go at once, writing nothing. A writer of this store object never holds it here, since
 * its transactions begin and commit within one turn of the event loop.
 */
function writeLocked(db: SqliteDatabase, busyTimeoutMs: number): boolean {
  db.pragma('busy_timeout = 0');
  try {
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
    return false;
  } catch (error) {
    if (sqliteCode(error) === 'SQLITE_BUSY') return true;
    throw error;
  } finally {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  }
}
