// Compares the two ways a PostgreSQL event store can keep a change feed that never skips a late commit,
// with raw `pg`, on a scratch schema that is dropped afterwards:
//   (a) a counter row every appending transaction locks and bumps: positions are commit order, commits serialise;
//   (b) each event records its transaction id (xid8) and a sequence number: commits run in parallel, and a
//       reader takes only events of transactions below the oldest one still running.
// Each writer is one connection appending one event per transaction to a stream of its own.
// Run: SESSIONFOLD_PG_URL=postgres://… npx tsx packages/store-postgres/measure/feed-designs.ts [seconds]
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const url = process.env['SESSIONFOLD_PG_URL'];
if (url === undefined) {
  console.info('set SESSIONFOLD_PG_URL to measure');
  process.exit(0);
}
const seconds = Number(process.argv[2] ?? 3);
const schema = `sf_measure_${randomBytes(4).toString('hex')}`;
const S = `"${schema}"`;

const SETUP = `
  CREATE SCHEMA ${S};
  CREATE TABLE ${S}.streams (stream text PRIMARY KEY, revision bigint NOT NULL);
  CREATE TABLE ${S}.counter (only_row boolean PRIMARY KEY DEFAULT true, position bigint NOT NULL);
  INSERT INTO ${S}.counter (position) VALUES (0);
  CREATE TABLE ${S}.events_a (position bigint PRIMARY KEY, stream text NOT NULL, revision bigint NOT NULL, data json NOT NULL);
  CREATE SEQUENCE ${S}.seq;
  CREATE TABLE ${S}.events_b (tx xid8 NOT NULL, seq bigint NOT NULL, stream text NOT NULL, revision bigint NOT NULL, data json NOT NULL,
                              PRIMARY KEY (tx, seq));
  CREATE FUNCTION ${S}.append_a(p_stream text, p_data text) RETURNS bigint LANGUAGE plpgsql AS $$
  DECLARE v_last bigint; v_rev bigint;
  BEGIN
    SELECT position INTO v_last FROM ${S}.counter FOR UPDATE;
    UPDATE ${S}.streams SET revision = revision + 1 WHERE stream = p_stream RETURNING revision INTO v_rev;
    INSERT INTO ${S}.events_a VALUES (v_last + 1, p_stream, v_rev, p_data::json);
    UPDATE ${S}.counter SET position = v_last + 1;
    RETURN v_last + 1;
  END $$;
  CREATE FUNCTION ${S}.append_b(p_stream text, p_data text) RETURNS bigint LANGUAGE plpgsql AS $$
  DECLARE v_rev bigint;
  BEGIN
    -- The stream row first, so the transaction id is taken only once the append is sure to go ahead.
    UPDATE ${S}.streams SET revision = revision + 1 WHERE stream = p_stream RETURNING revision INTO v_rev;
    INSERT INTO ${S}.events_b VALUES (pg_current_xact_id(), nextval('${S}.seq'), p_stream, v_rev, p_data::json);
    RETURN v_rev;
  END $$;
`;

async function measure(design: 'a' | 'b', writers: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: writers });
  const clients = await Promise.all(Array.from({ length: writers }, () => pool.connect()));
  const streams = clients.map((_, i) => `${design}-${writers}-${i}`);
  await (clients[0] as pg.PoolClient).query(`INSERT INTO ${S}.streams SELECT unnest($1::text[]), 0`, [streams]);
  const data = JSON.stringify({ text: 'x'.repeat(100) });
  const end = Date.now() + seconds * 1000;
  let total = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    clients.map(async (client, i) => {
      const text = `SELECT ${S}.append_${design}($1, $2)`;
      while (Date.now() < end) {
        await client.query({ name: `append_${design}`, text, values: [streams[i], data] });
        total++;
      }
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  for (const client of clients) client.release();
  await pool.end();
  return total / elapsed;
}

/** How long a feed read of design (b) takes: it must compare every candidate row with the snapshot's xmin. */
async function feedRead(design: 'a' | 'b'): Promise<{ rows: number; ms: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const text =
    design === 'a'
      ? `SELECT position, stream, revision, data FROM ${S}.events_a WHERE position >= 1 ORDER BY position LIMIT 512`
      : `SELECT tx, seq, stream, revision, data FROM ${S}.events_b WHERE tx < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY tx, seq LIMIT 512`;
  const runs = 200;
  const started = process.hrtime.bigint();
  let rows = 0;
  for (let i = 0; i < runs; i++) rows = (await client.query(text)).rowCount ?? 0;
  const ms = Number(process.hrtime.bigint() - started) / 1e6 / runs;
  await client.end();
  return { rows, ms };
}

const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(SETUP);
try {
  console.info(`appends/s, one event per transaction, ${seconds} s per cell`);
  console.info('writers | (a) counter row | (b) xid8 + sequence');
  for (const writers of [1, 8, 64]) {
    const a = await measure('a', writers);
    const b = await measure('b', writers);
    console.info(`${String(writers).padStart(7)} | ${a.toFixed(0).padStart(15)} | ${b.toFixed(0).padStart(19)}`);
  }
  const [ra, rb] = [await feedRead('a'), await feedRead('b')];
  console.info(`feed page of 512: (a) ${ra.ms.toFixed(2)} ms, (b) ${rb.ms.toFixed(2)} ms`);
} finally {
  await admin.query(`DROP SCHEMA ${S} CASCADE`);
  await admin.end();
}
