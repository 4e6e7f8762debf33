import {
  ConcurrencyError,
  DELETED_RECORD,
  InvalidInputError,
  SNAPSHOT_RECORD,
  type AppendResult,
  type ExpectedRevision,
  type StreamId,
} from '@sessionfold/core/kernel';
import { revisionMatches, type ValidatedEvent } from '@sessionfold/core/store-kit';
import { sqliteCode } from './errors.js';
import { Kind } from './schema.js';
import type { Statements } from './statements.js';

/**
 * The store's writes, each run inside the shared write transaction of a group commit. Every check comes
 * before the first write, so a write that fails with a port error has nothing to undo; the exception is an
 * append whose later event ids are refused by the unique index, which the caller runs in a savepoint.
 */
export interface Writes {
  /** Call when a write transaction begins or is rolled back: forgets the heads of the last transaction. */
  reset(): void;
  /** Call just before COMMIT: records which streams this transaction created or deleted. */
  beforeCommit(): void;
  append(stream: StreamId, rows: readonly ValidatedEvent[], expected: ExpectedRevision): AppendResult;
  /** Returns how many events it dropped. */
  compact(stream: StreamId, revision: number, snapshotJson: string): number;
  restore(stream: StreamId, revision: number, snapshotJson: string): AppendResult;
  delete(stream: StreamId, expected: ExpectedRevision): void;
  putBlob(stream: StreamId, sha256: string, bytes: Buffer): string;
}

/** The writes over prepared statements `s`; `recordedAt` gives the commit time of the current transaction. */
export function createWrites(s: Statements, recordedAt: () => string): Writes {
  // The revisions of the streams this transaction touched: as stored before it, and now. Appends that share
  // a commit often hit one stream, whose revision is then looked up once; the names of streams created or
  // deleted go to `streams` at COMMIT. Only valid under the write lock of one transaction, hence `reset`
  // at its start and on rollback.
  const heads = new Map<StreamId, { stored: number; current: number }>();
  const headOf = (stream: StreamId) => {
    const known = heads.get(stream);
    if (known) return known.current;
    const stored = Number(s.headRevision.get(stream, stream));
    heads.set(stream, { stored, current: stored });
    return stored;
  };
  // Asked only where it decides: a `'never_existed'` write to a stream that does not exist now.
  const wasDeleted = (stream: StreamId, expected: ExpectedRevision, head: number) =>
    expected === 'never_existed' && head === 0 && s.wasDeleted.get(stream) === 1;
  const setHead = (stream: StreamId, revision: number) => {
    headOf(stream);
    (heads.get(stream) as { current: number }).current = revision;
  };
  // Positions are rowids, and SQLite hands out max + 1: a record goes in before the rows it replaces are
  // deleted, so the largest position never goes back and a feed reader never sees a position twice.
  const insertRecord = (stream: StreamId, kind: number, revision: number, type: string, data: string) =>
    Number(s.insertRecord.run(stream, kind, revision, type, data, recordedAt()).lastInsertRowid);

  return {
    reset() {
      heads.clear();
    },

    beforeCommit() {
      for (const [stream, { stored, current }] of heads) {
        if (stored === 0 && current !== 0) s.insertStream.run(stream);
        else if (stored !== 0 && current === 0) s.deleteStream.run(stream);
      }
      heads.clear();
    },

    append(stream, rows, expected) {
      const firstId = (rows[0] as ValidatedEvent).eventId;
      if (firstId !== undefined) {
        const earlier = s.findEventId.get(stream, firstId) as { revision: number; position: number; batch_end: number } | undefined;
        // A retry: answer as the first time. The batch's rows are consecutive in revision and position.
        if (earlier) return { revision: earlier.batch_end, position: earlier.position + earlier.batch_end - earlier.revision };
      }
      const head = headOf(stream);
      if (!revisionMatches(expected, head, wasDeleted(stream, expected, head))) {
        // An id already in the stream is the caller's mistake whatever the revision: report that first.
        rows.forEach((row, index) => {
          if (index > 0 && row.eventId !== undefined && s.findEventId.get(stream, row.eventId) !== undefined) throw knownEventId(stream, row, index);
        });
        throw new ConcurrencyError(stream, expected, head);
      }
      const end = head + rows.length;
      const at = recordedAt();
      let position = 0;
      rows.forEach((row, index) => {
        try {
          const eventId = row.eventId ?? null;
          const batchEnd = eventId === null ? null : end;
          position = Number(s.insertEvent.run(stream, head + index + 1, row.type, row.dataJson, eventId, batchEnd, at, row.schemaVersion).lastInsertRowid);
        } catch (error) {
          if (row.eventId !== undefined && sqliteCode(error) === 'SQLITE_CONSTRAINT_UNIQUE' && String(error).includes('event_id')) {
            throw knownEventId(stream, row, index, error);
          }
          throw error;
        }
      });
      setHead(stream, end);
      return { revision: end, position };
    },

    compact(stream, revision, snapshotJson) {
      const head = headOf(stream);
      if (head === 0) throw new InvalidInputError('stream', `stream ${stream} does not exist`);
      if (revision > head) throw new InvalidInputError('snapshot.revision', `revision ${revision} is past the stream's revision ${head}`);
      const current = s.snapshotRecord.get(stream) as { revision: number } | undefined;
      if (current && revision < current.revision) {
        throw new InvalidInputError('snapshot.revision', `revision ${revision} is older than the stored snapshot's ${current.revision}`);
      }
      const position = insertRecord(stream, Kind.snapshot, revision, SNAPSHOT_RECORD, snapshotJson);
      const { changes } = s.deleteEventsThrough.run(stream, revision);
      s.deleteRecordsOfKind.run(stream, Kind.snapshot, position);
      return changes;
    },

    restore(stream, revision, snapshotJson) {
      const head = headOf(stream);
      if (head !== 0) throw new ConcurrencyError(stream, 'no_stream', head);
      const position = insertRecord(stream, Kind.snapshot, revision, SNAPSHOT_RECORD, snapshotJson);
      setHead(stream, revision);
      return { revision, position };
    },

    delete(stream, expected) {
      const head = headOf(stream);
      if (!revisionMatches(expected, head, wasDeleted(stream, expected, head))) throw new ConcurrencyError(stream, expected, head);
      if (head === 0) return;
      const position = insertRecord(stream, Kind.deleted, head, DELETED_RECORD, 'null');
      s.deleteAllEvents.run(stream);
      s.deleteAllRecords.run(stream, position);
      setHead(stream, 0);
      s.deleteOrphanBlobs.run(stream, stream);
      s.deleteBlobOwners.run(stream);
    },

    putBlob(stream, sha256, bytes) {
      s.insertBlob.run(sha256, bytes);
      s.insertBlobOwner.run(stream, sha256);
      return sha256;
    },
  };
}

function knownEventId(stream: StreamId, row: ValidatedEvent, index: number, cause?: unknown): InvalidInputError {
  return new InvalidInputError(`events[${index}].eventId`, `${JSON.stringify(row.eventId)} is already in stream ${stream}`, { cause });
}
