import { dumbo } from '@event-driven-io/dumbo';
import { NO_CONCURRENCY_CHECK, type Event, type ReadEvent, type ReadEventMetadataWithGlobalPosition } from '@event-driven-io/emmett';
import { getPostgreSQLEventStore, PostgreSQLEventStoreDefaultStreamVersion, readMessagesBatch } from '@event-driven-io/emmett-postgresql';
import type { EventStore, ExpectedRevision, JsonValue, RecordedEvent } from '@sessionfold/core';
import pg from 'pg';

type EmmettEvent = ReadEvent<Event, ReadEventMetadataWithGlobalPosition>;

/**
 * Messages per readAll page: the raw limit's page size, set the way a consumer sets it (`pulling: { batchSize }`;
 * its default is 100). Every page scans and sorts the messages table (nothing indexes the feed's order), so a read
 * costs about pages × table size: 1M events read in 37 s at this size here, 245 pages; at 100 a page, 10,000
 * pages would take about 25 minutes.
 */
const FEED_BATCH = 4096;

/** Emmett's expected stream version for one of our expected revisions. */
function expectedVersion(expected: ExpectedRevision): bigint | typeof NO_CONCURRENCY_CHECK {
  if (expected === 'any') return NO_CONCURRENCY_CHECK;
  // Emmett's STREAM_DOES_NOT_EXIST turns into "no check" in its SQL; version 0 makes the append insert the
  // stream row, which fails on the existing one, so "must not exist" is really checked.
  if (expected === 'no_stream') return PostgreSQLEventStoreDefaultStreamVersion;
  return BigInt(expected);
}

/** An Emmett event as one of ours, so the same fold reads both. */
function recorded(event: EmmettEvent): RecordedEvent {
  return {
    streamId: event.metadata.streamName,
    type: event.type,
    data: event.data as JsonValue,
    schemaVersion: 1,
    revision: Number(event.metadata.streamPosition),
    position: Number(event.metadata.globalPosition),
    recordedAt: '',
  };
}

const unsupported = (what: string) => () => {
  throw new Error(`bench: the Emmett PostgreSQL store has no ${what}`);
};

/**
 * Emmett's PostgreSQL event store (`getPostgreSQLEventStore`) in the database `database` of the server at
 * `connectionString`, seen through our port: append, read and readAll only, which is what the peer comparison
 * uses. The database is created (through the server's `postgres` database) when missing; dropping it is the
 * caller's job. Emmett keeps its tables in the database's `public` schema and checks whether its functions
 * exist database-wide, so two stores cannot share a database even on different schemas. readAll pages through
 * `readMessagesBatch` after the last global position, as Emmett's consumers do.
 */
export async function emmettPostgresStore(connectionString: string, database: string): Promise<EventStore> {
  await createDatabase(connectionString, database);
  const url = new URL(connectionString);
  url.pathname = `/${database}`;
  // One pool for the store and the feed reader; closing the store closes it.
  const pool = dumbo({ connectionString: url.href });
  const store = getPostgreSQLEventStore(url.href, { connectionOptions: { dumbo: pool } });
  await store.schema.migrate();
  let closed = false;
  return {
    async append(stream, events, options) {
      const messages = events.map((event) => ({ type: event.type, data: event.data as Record<string, unknown> }));
      const result = await store.appendToStream(stream, messages, { expectedStreamVersion: expectedVersion(options.expectedRevision) });
      return { revision: Number(result.nextExpectedStreamVersion), position: Number(result.lastEventGlobalPosition) };
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
      let after = BigInt((options?.fromPosition ?? 1) - 1);
      for (;;) {
        const batch = await readMessagesBatch(pool.execute, { after, batchSize: FEED_BATCH });
        for (const message of batch.messages) yield recorded(message as EmmettEvent);
        if (!batch.areMessagesLeft) break;
        after = batch.currentGlobalPosition;
      }
    },
    streams: unsupported('stream listing'),
    compact: unsupported('compaction'),
    restoreStream: unsupported('restore'),
    deleteStream: unsupported('delete'),
    putBlob: unsupported('blobs'),
    getBlob: unsupported('blobs'),
    blobs: unsupported('blobs'),
    async close() {
      if (closed) return;
      closed = true;
      await store.close();
    },
  };
}

/** Creates `database` on the server of `connectionString` unless it exists (a reopened store finds it there). */
async function createDatabase(connectionString: string, database: string): Promise<void> {
  const url = new URL(connectionString);
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.href });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (rowCount === 0) await admin.query(`CREATE DATABASE "${database}"`);
  } finally {
    await admin.end();
  }
}
