import { createHash } from 'node:crypto';
import type { VerifyCode, VerifyProblem, VerifyReport, VerifySeverity } from '@sessionfold/core/kernel';
import { checkpointDigest } from './checkpoint-slot.js';
import { openDatabaseReadOnly, type SqliteDatabase } from './database.js';
import { sqliteCode } from './errors.js';
import { Kind } from './schema.js';

/** Blobs hashed between two looks at the abort signal and the event loop. */
const BLOBS_PER_TURN = 64;

/**
 * Checks a store's file through a connection of its own, opened read-only (so nothing it does can write)
 * and holding one read transaction (so every check sees the same commit while the store goes on writing):
 * SQLite's `integrity_check` (page structure, every index against its table), then what SQLite cannot know
 * about: revisions gap-free and positions rising in each stream, snapshot records that parse and name their
 * stream, event data that is JSON, the stream list against the events, blob bytes against their sha256,
 * owners without bytes, bytes without owners, checkpoints against their sha256. Driver errors are thrown as
 * they are; the caller translates them.
 */
export async function verifyDatabase(path: string, busyTimeoutMs: number, signal: AbortSignal | undefined): Promise<VerifyReport> {
  signal?.throwIfAborted();
  const db = openDatabaseReadOnly(path, busyTimeoutMs);
  const problems: VerifyProblem[] = [];
  const add = (severity: VerifySeverity, code: VerifyCode, table: string | undefined, key: string | undefined, message: string) => {
    problems.push({ severity, code, message, file: path, ...(table === undefined ? {} : { table }), ...(key === undefined ? {} : { key }) });
  };
  try {
    db.exec('BEGIN');
    // Each check runs even when another found damage: a page SQLite cannot read fails that query alone.
    const step = async (work: () => void | Promise<void>) => {
      signal?.throwIfAborted();
      try {
        await work();
      } catch (error) {
        const code = sqliteCode(error);
        if (code === undefined || !(code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB')) throw error;
        add('error', 'integrity_check', undefined, undefined, `a query met a damaged page (${code}: ${(error as Error).message})`);
      }
      await new Promise((resolve) => setImmediate(resolve));
    };
    await step(() => {
      for (const row of db.pragma('integrity_check') as { integrity_check: string }[]) {
        if (row.integrity_check !== 'ok') add('error', 'integrity_check', undefined, undefined, row.integrity_check);
      }
    });
    const checked = { streams: 0, records: 0, snapshots: 0, blobs: 0 };
    await step(() => {
      checked.streams = Number(db.prepare('SELECT count(*) FROM streams').pluck().get());
      checked.records = Number(db.prepare('SELECT count(*) FROM events').pluck().get());
      checked.snapshots = Number(db.prepare(`SELECT count(*) FROM events WHERE kind = ${Kind.snapshot}`).pluck().get());
      checked.blobs = Number(db.prepare('SELECT count(*) FROM blobs').pluck().get());
    });
    await step(() => checkRevisions(db, add));
    await step(() => checkPositions(db, add));
    await step(() => checkRecords(db, add));
    await step(() => checkStreamList(db, add));
    await step(() => checkBlobs(db, add, signal));
    await step(() => checkCheckpoints(db, add));
    return { ok: !problems.some((p) => p.severity === 'error'), problems, checked };
  } finally {
    // The transaction only read; after damage SQLite may already have ended it, and closing ends it anyway.
    db.close();
  }
}

type Add = (severity: VerifySeverity, code: VerifyCode, table: string | undefined, key: string | undefined, message: string) => void;

/** A stream's events are revisions snapshot + 1 (or 1) through its head, each once. */
function checkRevisions(db: SqliteDatabase, add: Add): void {
  const rows = db
    .prepare(
      `SELECT e.stream AS stream, min(e.revision) AS first, max(e.revision) AS last, count(*) AS n,
              (SELECT r.revision FROM events AS r WHERE r.stream = e.stream AND r.kind <> ${Kind.event} AND r.kind = ${Kind.snapshot}) AS snapshot
       FROM events AS e WHERE e.kind = ${Kind.event} GROUP BY e.stream`,
    )
    .all() as { stream: string; first: number; last: number; n: number; snapshot: number | null }[];
  for (const row of rows) {
    const expectedFirst = (row.snapshot ?? 0) + 1;
    if (row.first !== expectedFirst || row.n !== row.last - row.first + 1) {
      add(
        'error',
        'revision_gap',
        'events',
        row.stream,
        `stream ${row.stream} holds ${row.n} events with revisions ${row.first}..${row.last}; expected every revision from ${expectedFirst}`,
      );
    }
  }
}

/** In a stream, each event's position is above the one of the revision before it. */
function checkPositions(db: SqliteDatabase, add: Add): void {
  const rows = db
    .prepare(
      `SELECT a.stream AS stream, min(a.revision) AS revision FROM events AS a
       JOIN events AS b ON b.stream = a.stream AND b.kind = ${Kind.event} AND b.revision = a.revision + 1
       WHERE a.kind = ${Kind.event} AND b.position <= a.position GROUP BY a.stream`,
    )
    .all() as { stream: string; revision: number }[];
  for (const row of rows) {
    add(
      'error',
      'position_order',
      'events',
      row.stream,
      `stream ${row.stream}: revision ${row.revision + 1} has a position not above revision ${row.revision}'s`,
    );
  }
}

/** Event data is JSON; a snapshot record holds a snapshot of its own stream at its own revision. */
function checkRecords(db: SqliteDatabase, add: Add): void {
  const bad = db.prepare('SELECT position, stream, revision FROM events WHERE json_valid(data) = 0').all() as {
    position: number;
    stream: string;
    revision: number;
  }[];
  for (const row of bad)
    add('error', 'damaged_record', 'events', String(row.position), `position ${row.position} (${row.stream}@${row.revision}): data is not JSON`);
  const snapshots = db.prepare(`SELECT position, stream, revision, data FROM events WHERE kind <> ${Kind.event} AND kind = ${Kind.snapshot}`);
  for (const row of snapshots.iterate() as IterableIterator<{ position: number; stream: string; revision: number; data: string }>) {
    const reason = snapshotProblem(row.data, row.stream, row.revision);
    if (reason !== undefined)
      add('error', 'damaged_snapshot', 'events', row.stream, `the snapshot record of ${row.stream} (position ${row.position}) ${reason}`);
  }
}

function snapshotProblem(json: string, stream: string, revision: number): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return 'is not JSON';
  }
  const snapshot = value as { revision?: unknown; state?: unknown; identity?: { stream?: unknown; schemaVersion?: unknown } } | null;
  if (typeof snapshot !== 'object' || snapshot === null || !('state' in snapshot)) return 'is not a snapshot';
  if (snapshot.revision !== revision) return `says revision ${String(snapshot.revision)}, its row ${revision}`;
  if (snapshot.identity?.stream !== stream) return `names stream ${JSON.stringify(snapshot.identity?.stream)} in its identity`;
  if (!Number.isSafeInteger(snapshot.identity.schemaVersion)) return 'has no integer schema version';
  return undefined;
}

/** `streams` lists exactly the streams that have events or a snapshot. */
function checkStreamList(db: SqliteDatabase, add: Add): void {
  const listedEmpty = db
    .prepare(
      // Two lookups, not one with OR: each is served by its own partial index (events_by_revision, events_records:
      // SQLite uses a partial index only when the query repeats its condition), where an OR scans every event per stream.
      `SELECT s.stream FROM streams AS s
         WHERE NOT EXISTS (SELECT 1 FROM events AS e WHERE e.stream = s.stream AND e.kind = ${Kind.event})
           AND NOT EXISTS (SELECT 1 FROM events AS e WHERE e.stream = s.stream AND e.kind <> ${Kind.event} AND e.kind = ${Kind.snapshot})`,
    )
    .pluck()
    .all() as string[];
  for (const stream of listedEmpty) add('error', 'index_mismatch', 'streams', stream, `stream ${stream} is listed but has neither events nor a snapshot`);
  const unlisted = db
    .prepare(
      `SELECT DISTINCT e.stream FROM events AS e WHERE e.kind IN (${Kind.event}, ${Kind.snapshot})
         AND NOT EXISTS (SELECT 1 FROM streams AS s WHERE s.stream = e.stream)`,
    )
    .pluck()
    .all() as string[];
  for (const stream of unlisted) add('error', 'index_mismatch', 'streams', stream, `stream ${stream} has events but is not listed`);
}

async function checkBlobs(db: SqliteDatabase, add: Add, signal: AbortSignal | undefined): Promise<void> {
  let count = 0;
  for (const row of db.prepare('SELECT sha256, bytes FROM blobs').iterate() as IterableIterator<{ sha256: string; bytes: Uint8Array }>) {
    if (createHash('sha256').update(row.bytes).digest('hex') !== row.sha256) {
      add('error', 'blob_hash', 'blobs', row.sha256, `the bytes of blob ${row.sha256} do not match their sha256`);
    }
    if (++count % BLOBS_PER_TURN === 0) {
      signal?.throwIfAborted();
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  const missing = db
    .prepare('SELECT o.stream AS stream, o.sha256 AS sha256 FROM blob_owners AS o WHERE NOT EXISTS (SELECT 1 FROM blobs AS b WHERE b.sha256 = o.sha256)')
    .all() as { stream: string; sha256: string }[];
  for (const row of missing) add('error', 'blob_missing', 'blob_owners', row.sha256, `stream ${row.stream} owns blob ${row.sha256}, which has no bytes`);
  const orphans = db
    .prepare('SELECT b.sha256 FROM blobs AS b WHERE NOT EXISTS (SELECT 1 FROM blob_owners AS o WHERE o.sha256 = b.sha256)')
    .pluck()
    .all() as string[];
  for (const sha of orphans) add('warning', 'blob_orphan', 'blobs', sha, `blob ${sha} is owned by no stream`);
}

function checkCheckpoints(db: SqliteDatabase, add: Add): void {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'").pluck().get();
  if (exists === undefined) return;
  for (const row of db.prepare('SELECT name, sha256, data FROM checkpoints').iterate() as IterableIterator<{
    name: string;
    sha256: string;
    data: string | Uint8Array;
  }>) {
    const data = typeof row.data === 'string' ? row.data : new Uint8Array(row.data);
    if (checkpointDigest(data) !== row.sha256) add('error', 'damaged_record', 'checkpoints', row.name, `checkpoint ${row.name} does not match its sha256`);
  }
}
