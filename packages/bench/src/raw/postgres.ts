import { createHash } from 'node:crypto';
import pg from 'pg';
import { benchEvent, emptyRecord, foldData, rowJson } from '../fixtures.js';
import type { RawFamily, RawRead, RawWriter } from '../raw-limits.js';
import { RssTracker, timeSequential, type Timed } from '../stats.js';

/** The server the PostgreSQL rows run against; without it they are "n/a". */
export const PG_URL = process.env['SESSIONFOLD_PG_URL'];
const NOW = new Date().toISOString();
/** Rows per read query: keyset pages by primary key, so memory stays bounded like a store's reads. */
const PAGE = 4096;

const made = new Set<string>();
const madeDatabases = new Set<string>();

/** The name a bench directory's data has on the server (the same directory always maps to the same one). */
function benchName(dir: string, label: string): string {
  return `sf_bench_${label}_${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`;
}

/** The schema a bench directory's data lives in on the server (the same directory always maps to the same one). */
export function benchSchema(dir: string, label = 'store'): string {
  const schema = benchName(dir, label);
  made.add(schema);
  return schema;
}

/**
 * The database a bench directory's data lives in, for a store that can keep only one instance per database
 * (the same directory always maps to the same one; the store creates it, the bench drops it at the end).
 */
export function benchDatabase(dir: string, label: string): string {
  const database = benchName(dir, label);
  madeDatabases.add(database);
  return database;
}

/** Drops every schema and database this run made (the bench calls it when it removes its directories). */
export async function dropBenchData(): Promise<void> {
  if (PG_URL === undefined || made.size + madeDatabases.size === 0) return;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    for (const schema of made) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    made.clear();
    // FORCE: a pool a failed scenario left open must not keep its database alive.
    for (const database of madeDatabases) await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    madeDatabases.clear();
  } finally {
    await client.end();
  }
}

/** A connection on a fresh schema holding one events table shaped like an event store's. */
async function openDb(dir: string, label: string): Promise<{ client: pg.Client; S: string }> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  const S = `"${benchSchema(dir, label)}"`;
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${S};
    CREATE TABLE IF NOT EXISTS ${S}.events (
      position bigserial PRIMARY KEY, stream text NOT NULL, revision bigint NOT NULL,
      type text NOT NULL, data json NOT NULL, recorded_at text NOT NULL, UNIQUE (stream, revision));
    CREATE TABLE IF NOT EXISTS ${S}.snapshots (stream text PRIMARY KEY, revision bigint NOT NULL, state json NOT NULL)`);
  return { client, S };
}

/** Inserts rows [from, from+count) of each of `streams` in one multi-row statement (one transaction). */
function insertRows(client: pg.Client, S: string, streams: readonly string[], from: number, count: number) {
  const names: string[] = [];
  const revisions: number[] = [];
  const types: string[] = [];
  const data: string[] = [];
  for (const stream of streams) {
    for (let k = from; k < from + count; k++) {
      const event = benchEvent(k);
      names.push(stream);
      revisions.push(k + 1);
      types.push(event.type);
      data.push(rowJson(event));
    }
  }
  return client.query({
    name: 'raw-insert',
    text: `INSERT INTO ${S}.events (stream, revision, type, data, recorded_at)
           SELECT u.s, u.r, u.t, u.d::json, $5 FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS u(s, r, t, d)`,
    values: [names, revisions, types, data, NOW],
  });
}

/** Fills `streams` with `perStream` rows each in large transactions (setup, untimed). */
async function fill(client: pg.Client, S: string, streams: readonly string[], perStream: number): Promise<void> {
  for (let i = 0; i < perStream; i += 2000) await insertRows(client, S, streams, i, Math.min(2000, perStream - i));
  // Statistics for the table just filled: without them the planner takes it for a few pages and answers each
  // page of a read with a scan and sort of the whole table, until autovacuum happens to analyze it.
  await client.query(`ANALYZE ${S}.events`);
}

/** Reads rows by keyset pages of `PAGE`, folding each; `where` bounds the rows, `order` is the key. */
async function readFold(client: pg.Client, text: (after: string) => string, key: (row: unknown[]) => unknown): Promise<RawRead> {
  const rss = new RssTracker();
  const start = performance.now();
  const record = emptyRecord();
  let n = 0;
  let after: unknown = 0;
  for (;;) {
    const { rows } = await client.query<unknown[]>({ text: text('$1'), values: [after], rowMode: 'array', types: RAW_TYPES });
    for (const row of rows) {
      foldData(record, JSON.parse(row[1] as string), Number(row[0]));
      if (++n % 4096 === 0) rss.sample();
    }
    if (rows.length < PAGE) break;
    after = key(rows[rows.length - 1] as unknown[]);
  }
  return { events: n, ms: performance.now() - start, rssGrowthMb: rss.growthMb };
}

/** json as text, so parsing is timed where a store parses: at the consumer. */
const RAW_TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 114 ? (text: string) => text : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** node-postgres directly: multi-row inserts from arrays, one statement (and transaction) per write; keyset-paged reads. */
export const rawPostgres: RawFamily = {
  name: 'postgres',
  describe: {
    appendBatches: 'pg: the batch’s rows in one INSERT … SELECT unnest(arrays), one transaction',
    appendSpread: 'pg: one row per stream, all in one INSERT … SELECT unnest(arrays)',
    replay: `pg: the stream’s rows by primary key, pages of ${PAGE} + JSON.parse + fold`,
    readAll: `pg: all rows in position order, pages of ${PAGE} + JSON.parse`,
    compact: 'one transaction: read + fold, insert the snapshot row, delete the events',
    coldOpen: 'connect, read + parse every row',
  },

  async appendBatches(dir, batchSize): Promise<RawWriter> {
    const { client, S } = await openDb(dir, 'append');
    return { write: async (i) => void (await insertRows(client, S, ['raw'], i * batchSize, batchSize)), close: () => client.end() };
  },

  async appendSpread(dir, streams): Promise<RawWriter> {
    const { client, S } = await openDb(dir, 'spread');
    const names = Array.from({ length: streams }, (_, s) => `raw-${s}`);
    return { write: async (r) => void (await insertRows(client, S, names, r, 1)), close: () => client.end() };
  },

  async replay(dir, events) {
    const setup = await openDb(dir, 'replay');
    await fill(setup.client, setup.S, ['raw'], events);
    await setup.client.end();
    return async (): Promise<RawRead> => {
      // Connected before the clock starts, as the stores are: reads measure reading; opening is `cold-open`'s.
      const { client, S } = await openDb(dir, 'replay');
      try {
        return await readFold(
          client,
          (after) => `SELECT revision, data FROM ${S}.events WHERE stream = 'raw' AND revision > ${after} ORDER BY revision LIMIT ${PAGE}`,
          (row) => row[0],
        );
      } finally {
        await client.end();
      }
    };
  },

  async readAll(dir, events, streams) {
    const setup = await openDb(dir, 'all');
    await fill(
      setup.client,
      setup.S,
      Array.from({ length: streams }, (_, s) => `s${s}`),
      Math.ceil(events / streams),
    );
    await setup.client.end();
    return async (): Promise<RawRead> => {
      const { client, S } = await openDb(dir, 'all');
      try {
        return await readFold(
          client,
          (after) => `SELECT revision, data, position, stream, type, recorded_at FROM ${S}.events WHERE position > ${after} ORDER BY position LIMIT ${PAGE}`,
          (row) => row[2],
        );
      } finally {
        await client.end();
      }
    };
  },

  async fillSpread(dir, streams, perStream, group, batch): Promise<Timed> {
    const { client, S } = await openDb(dir, 'fill');
    const names = Array.from({ length: streams }, (_, s) => `s${s}`);
    try {
      // Every statement is queued at once: the connection sends the next as soon as one is answered, and the
      // rows of the later ones are built while the server writes the earlier ones.
      return await timeSequential(1, async () => {
        const sent: Array<Promise<unknown>> = [];
        for (let s = 0; s < streams; s += group) {
          for (let i = 0; i < perStream; i += batch) sent.push(insertRows(client, S, names.slice(s, s + group), i, Math.min(batch, perStream - i)));
        }
        await Promise.all(sent);
      });
    } finally {
      await client.end();
    }
  },

  async compact(dir, events): Promise<Timed> {
    const { client, S } = await openDb(dir, 'compact');
    try {
      await fill(client, S, ['s'], events);
      return await timeSequential(1, async () => {
        await client.query('BEGIN');
        const record = emptyRecord();
        const { rows } = await client.query<unknown[]>({
          text: `SELECT revision, data FROM ${S}.events WHERE stream = 's' ORDER BY revision`,
          rowMode: 'array',
          types: RAW_TYPES,
        });
        for (const [revision, data] of rows) foldData(record, JSON.parse(data as string), Number(revision));
        await client.query(
          `INSERT INTO ${S}.snapshots VALUES ('s', $1, $2) ON CONFLICT (stream) DO UPDATE SET revision = excluded.revision, state = excluded.state`,
          [record.lastRevision, JSON.stringify(record)],
        );
        await client.query(`DELETE FROM ${S}.events WHERE stream = 's' AND revision <= $1`, [record.lastRevision]);
        await client.query('COMMIT');
      });
    } finally {
      await client.end();
    }
  },

  async coldOpen(dir, sessions, eventsPerSession): Promise<Timed> {
    const setup = await openDb(dir, 'cold');
    await fill(
      setup.client,
      setup.S,
      Array.from({ length: sessions }, (_, s) => `s${s}`),
      eventsPerSession,
    );
    await setup.client.end();
    const S = `"${benchSchema(dir, 'cold')}"`;
    return timeSequential(1, async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        await readFold(
          client,
          (after) => `SELECT revision, data, position FROM ${S}.events WHERE position > ${after} ORDER BY position LIMIT ${PAGE}`,
          (row) => row[2],
        );
      } finally {
        await client.end();
      }
    });
  },
};
