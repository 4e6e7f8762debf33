import { NO_CONCURRENCY_CHECK, STREAM_DOES_NOT_EXIST, type Event, type ReadEvent, type ReadEventMetadataWithGlobalPosition } from '@event-driven-io/emmett';
import { getSQLiteEventStore, readMessagesBatch, sqliteConnection } from '@event-driven-io/emmett-sqlite';
import type { EventStore, ExpectedRevision, JsonValue, RecordedEvent } from '@sessionfold/core';
import { join } from 'node:path';

type EmmettEvent = ReadEvent<Event, ReadEventMetadataWithGlobalPosition>;

/** Emmett's stream version for one of our expected revisions. */
function expectedVersion(expected: ExpectedRevision): bigint | typeof STREAM_DOES_NOT_EXIST {
  if (expected === 'any') return NO_CONCURRENCY_CHECK as typeof STREAM_DOES_NOT_EXIST;
  if (expected === 'no_stream' || expected === 0) return STREAM_DOES_NOT_EXIST;
  return BigInt(expected);
}

/** An Emmett event as one of ours, so the same fold reads both. */
function recorded(event: EmmettEvent): RecordedEvent {
  return {
    streamId: event.metadata.streamName,
    type: event.type,
    data: event.data as JsonValue,
    revision: Number(event.metadata.streamPosition),
    position: Number(event.metadata.globalPosition),
    recordedAt: '',
  };
}

/** Attempts of one append that fails with SQLITE_BUSY before the error is passed on. */
const BUSY_ATTEMPTS = 10;

const unsupported = (what: string) => () => {
  throw new Error(`bench: the Emmett SQLite store has no ${what}`);
};

/**
 * Emmett's SQLite event store (`getSQLiteEventStore`, file `emmett.sqlite` in `dir`) seen through our port:
 * append, read and readAll only, which is what the peer comparison uses. readAll pages through
 * `readMessagesBatch`, the call Emmett's own consumers use. Appends that fail with SQLITE_BUSY are retried
 * (counted in `counters.busyRetries`); the retries' time is part of the measured latency.
 */
export function emmettSqliteStore(dir: string, counters: { busyRetries: number } = { busyRetries: 0 }): EventStore {
  const fileName = join(dir, 'emmett.sqlite');
  const store = getSQLiteEventStore({ fileName });
  return {
    async append(stream, events, options) {
      const messages = events.map((event) => ({ type: event.type, data: event.data as Record<string, unknown> }));
      for (let attempt = 1; ; attempt++) {
        try {
          const result = await store.appendToStream(stream, messages, { expectedStreamVersion: expectedVersion(options.expectedRevision) });
          return { revision: Number(result.nextExpectedStreamVersion), position: Number(result.lastEventGlobalPosition) };
        } catch (error) {
          // Each append opens a fresh connection whose WAL pragma is not awaited; under a slow disk its COMMIT
          // can meet that statement and fail with SQLITE_BUSY after rolling back, so retrying is safe.
          if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || attempt >= BUSY_ATTEMPTS) throw error;
          counters.busyRetries++;
        }
      }
    },
    async read(stream) {
      const result = await store.readStream(stream);
      const events = result.events.filter((event): event is EmmettEvent => event !== null);
      return {
        revision: Number(result.currentStreamVersion),
        events: (async function* () {
          for (const event of events) yield recorded(event);
        })(),
      };
    },
    async *readAll(options) {
      const connection = sqliteConnection({ fileName });
      try {
        let after = BigInt((options?.fromPosition ?? 1) - 1);
        for (;;) {
          const batch = await readMessagesBatch(connection, { after, batchSize: 1_000 });
          for (const message of batch.messages) yield recorded(message as EmmettEvent);
          if (!batch.areEventsLeft || batch.messages.length === 0) break;
          after = batch.currentGlobalPosition;
        }
      } finally {
        connection.close();
      }
    },
    streams: unsupported('stream listing'),
    compact: unsupported('compaction'),
    restoreStream: unsupported('restore'),
    deleteStream: unsupported('delete'),
    putBlob: unsupported('blobs'),
    getBlob: unsupported('blobs'),
    blobs: unsupported('blobs'),
    async close() {},
  };
}
