// Appends per second through postgresStore with 1 and with 64 appends in flight (one event each, to 64
// streams with expected revisions), next to the raw limits of the same server measured in the same run:
// raw `pg`, one insert per transaction, and one 64-row insert per transaction. Scratch schemas, dropped after.
// Run: SESSIONFOLD_PG_URL=postgres://… npx tsx --conditions=sessionfold-source packages/store-postgres/measure/group-commit.ts [seconds] [rounds]
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { postgresStore } from '@sessionfold/store-postgres';

const url = process.env['SESSIONFOLD_PG_URL'];
if (url === undefined) {
  console.info('set SESSIONFOLD_PG_URL to measure');
  process.exit(0);
}
const seconds = Number(process.argv[2] ?? 1);
const rounds = Number(process.argv[3] ?? 7);
const data = { text: 'x'.repeat(100) };
const admin = new pg.Client({ connectionString: url });
await admin.connect();
const schemas: string[] = [];
const fresh = () => {
  const schema = `sf_measure_${randomBytes(4).toString('hex')}`;
  schemas.push(schema);
  return schema;
};

/** Runs `round` (which appends `perRound` events) until the time is up; events per second. */
async function rate(perRound: number, round: () => Promise<unknown>): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let events = 0;
  const started = process.hrtime.bigint();
  while (Date.now() < end) {
    await round();
    events += perRound;
  }
  return events / (Number(process.hrtime.bigint() - started) / 1e9);
}

/** A store appending `inFlight` appends at a time, one event each, to as many streams, with expected revisions. */
async function storeRunner(inFlight: number): Promise<{ measure(): Promise<number>; close(): Promise<void> }> {
  const store = await postgresStore({ connectionString: url as string, schema: fresh() });
  const streams = Array.from({ length: inFlight }, (_, i) => `s-${i}`);
  const revisions = streams.map(() => 0);
  const round = () =>
    Promise.all(
      streams.map(async (stream, i) => {
        const result = await store.append(stream, [{ type: 'Noted', data }], { expectedRevision: revisions[i] as number });
        revisions[i] = result.revision;
      }),
    );
  return { measure: () => rate(inFlight, round), close: () => store.close() };
}

/** Raw `pg` inserting `rowsPerTransaction` rows per transaction (one statement, autocommit). */
async function rawRunner(rowsPerTransaction: number): Promise<{ measure(): Promise<number>; close(): Promise<void> }> {
  const S = `"${fresh()}"`;
  await admin.query(`CREATE SCHEMA ${S}; CREATE TABLE ${S}.events (position bigserial PRIMARY KEY, stream text NOT NULL, data json NOT NULL)`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const streams = Array.from({ length: rowsPerTransaction }, (_, i) => `s-${i}`);
  const json = streams.map(() => JSON.stringify(data));
  const round = () =>
    client.query({
      name: 'raw',
      text: `INSERT INTO ${S}.events (stream, data) SELECT unnest($1::text[]), unnest($2::text[])::json`,
      values: [streams, json],
    });
  return { measure: () => rate(rowsPerTransaction, round), close: () => client.end() };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

try {
  // The machine is shared: the four measurements take turns, round after round, so a slow spell of the disk
  // weighs on all of them alike; the medians are reported, with the median of each round's ratio.
  const runners = [await rawRunner(1), await storeRunner(1), await rawRunner(64), await storeRunner(64)];
  const results: number[][] = runners.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (const [index, runner] of runners.entries()) (results[index] as number[]).push(await runner.measure());
  }
  for (const runner of runners) await runner.close();
  const [raw1, one, raw64, many] = results as [number[], number[], number[], number[]];
  const ratio = (a: number[], b: number[]) => median(a.map((value, i) => value / (b[i] as number))).toFixed(2);
  console.info(`events/s, median of ${rounds} rounds of ${seconds} s each`);
  console.info(`raw pg, one insert per transaction:        ${median(raw1).toFixed(0)}`);
  console.info(`raw pg, one 64-row insert per transaction: ${median(raw64).toFixed(0)}`);
  console.info(`postgresStore, 1 append in flight:         ${median(one).toFixed(0)} (${ratio(one, raw1)} × raw single)`);
  console.info(`postgresStore, 64 appends in flight:       ${median(many).toFixed(0)} (${ratio(many, raw64)} × raw multi-row)`);
} finally {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
