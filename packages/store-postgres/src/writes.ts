import { createHash } from 'node:crypto';
import { ConcurrencyError, InvalidInputError, type EventStore, type ExpectedRevision } from '@sessionfold/core/kernel';
import {
  eventBytes,
  readClock,
  snapshotJson,
  validateAppend,
  validateNewStreamId,
  validateSnapshot,
  validateStreamId,
  validateWriteOptions,
  type ValidatedAppend,
} from '@sessionfold/core/store-kit';
import type { StoreContext } from './context.js';
import { GroupCommit, type AppendJob, type JobAnswer } from './group-commit.js';

/** `expectedRevision` as the SQL functions take it: a revision, 0 for no stream, -1 for any, -2 for never existed. */
const expectedCode = (expected: ExpectedRevision): number =>
  expected === 'any' ? -1 : expected === 'no_stream' ? 0 : expected === 'never_existed' ? -2 : expected;

/** The port's writes; `drain` resolves once every append accepted so far is answered. */
export type Writes = Pick<EventStore, 'append' | 'compact' | 'restoreStream' | 'deleteStream' | 'putBlob'> & { drain(): Promise<void> };

/**
 * The writes, each one statement (one round trip, one transaction) calling a function of the schema. Appends
 * in flight together share one call of `append_batches` (group commit), which decides every expected revision,
 * `never_existed` included, under the feed counter's lock.
 */
export function createWrites(ctx: StoreContext): Writes {
  const { q, rows, writable, changes, config } = ctx;
  const { observe, observed } = config;
  /** The commit time: read before the statement is sent, so a clock that fails leaves nothing half-written. */
  const now = () => readClock(config.clock);

  /** Sends `jobs` as one call of `append_batches`, in order, and tells followers and the observer what was written. */
  const commits = new GroupCommit(async (jobs: readonly AppendJob[]): Promise<JobAnswer[]> => {
    // One commit time for the group. A clock that fails rejects every append of the group with
    // InvalidInputError before anything is sent: the group is one transaction, there is no time to give it.
    const at = now();
    const columns: [string[], number[], number[], string[], string[], Array<string | null>, number[], string] = [[], [], [], [], [], [], [], at];
    const [streams, expected, counts, types, data, ids, versions] = columns;
    for (const job of jobs) {
      streams.push(job.stream);
      expected.push(expectedCode(job.expected));
      counts.push(job.rows.length);
      for (const row of job.rows) {
        types.push(row.type);
        data.push(row.dataJson);
        ids.push(row.eventId ?? null);
        versions.push(row.schemaVersion);
      }
    }
    const started = performance.now();
    const { rows: answers } = await ctx.tracked(ctx.pool.query<{ status: number; revision: number; pos: number | null }>(q.appendBatches(columns)));
    const syncMs = performance.now() - started;
    const written = jobs.filter((_, index) => answers[index]?.status === 0);
    if (written.length > 0) {
      changes.notify();
      if (observed) {
        const events = written.reduce((sum, job) => sum + job.rows.length, 0);
        observe('flushed', { appends: written.length, events, bytes: written.reduce((sum, job) => sum + job.bytes, 0), syncMs });
      }
    }
    return answers.map((row) => ({ status: row.status, revision: row.revision, position: row.pos }));
  }, ctx.translate);

  return {
    append(stream, events, appendOptions) {
      const started = observed ? performance.now() : 0;
      let batch: ValidatedAppend;
      try {
        writable();
        // Only what validation read is written: the caller's objects are not looked at again. Validation
        // also refuses what a text column cannot hold as given (U+0000, lone surrogates), so such an append
        // fails alone, before it joins a group.
        batch = validateAppend(stream, events, appendOptions, config.maxEventBytes);
      } catch (error) {
        return Promise.reject(error);
      }
      // Counted once, and only for an observer.
      const bytes = observed ? eventBytes(batch.events) : 0;
      const committed = commits.submit({ stream, expected: batch.expectedRevision, rows: batch.events, bytes });
      if (!observed) return committed;
      return committed.then((result) => {
        observe('appendCommitted', { stream, events: batch.events.length, bytes, durationMs: performance.now() - started });
        return result;
      });
    },

    async compact(stream, snapshot) {
      writable();
      const validated = validateSnapshot(stream, snapshot);
      const { revision } = validated;
      const at = now();
      const started = performance.now();
      const [row] = await rows<{ status: number; dropped: number }>(q.compact([stream, revision, snapshotJson(validated), at]));
      switch (row?.status) {
        case 0:
          changes.notify();
          observe('compacted', { stream, revision, droppedEvents: row.dropped, durationMs: performance.now() - started });
          return;
        case 1:
          throw new InvalidInputError('stream', `stream ${stream} does not exist`);
        case 2:
          throw new InvalidInputError('snapshot.revision', `revision ${revision} is past the stream's revision`);
        default:
          throw new InvalidInputError('snapshot.revision', `revision ${revision} is older than the stored snapshot's`);
      }
    },

    async restoreStream(stream, snapshot) {
      writable();
      validateNewStreamId(stream);
      const validated = validateSnapshot(stream, snapshot);
      const at = now();
      const [row] = await rows<{ status: number; value: number }>(q.restore([stream, validated.revision, snapshotJson(validated), at]));
      if (row === undefined || row.status !== 0) throw new ConcurrencyError(stream, 'no_stream', row?.value ?? 0);
      changes.notify();
      return { revision: validated.revision, position: row.value };
    },

    async deleteStream(stream, deleteOptions) {
      writable();
      validateStreamId(stream);
      const expected = validateWriteOptions(deleteOptions);
      const at = now();
      // Deleting nothing changes nothing, so this check needs no lock: a stream deleted before is refused.
      const [gone] = expected === 'never_existed' ? await rows<{ revision: number }>(q.deletedAmong([[stream]])) : [];
      if (gone) throw new ConcurrencyError(stream, expected, gone.revision);
      // delete_stream takes 'never_existed' as 'no_stream': the `$deleted` record was looked for above.
      const [row] = await rows<{ matched: boolean; head: number }>(q.deleteStream([stream, expected === 'never_existed' ? 0 : expectedCode(expected), at]));
      if (row !== undefined && !row.matched) throw new ConcurrencyError(stream, expected, row.head);
      if (row !== undefined && row.head > 0) changes.notify();
    },

    async putBlob(stream, bytes) {
      writable();
      validateStreamId(stream);
      if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      // Copied now: the caller may reuse its buffer before the query is sent.
      await rows(q.putBlob([stream, sha256, Buffer.from(bytes)]));
      return sha256;
    },

    drain: () => commits.drain(),
  };
}
