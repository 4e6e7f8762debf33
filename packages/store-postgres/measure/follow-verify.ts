// How long `follow` on a second store object takes to yield another connection's commit, woken by NOTIFY and,
// with the notifying trigger disabled, by its poll alone; how long `verify` takes over a schema of many events;
// and what an observer costs appends with 64 in flight. A scratch schema, dropped afterwards.
// Run: SESSIONFOLD_PG_URL=postgres://… npx tsx --conditions=sessionfold-source packages/store-postgres/measure/follow-verify.ts [events]
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { postgresStore, type PostgresEventStore } from '@sessionfold/store-postgres';

const url = process.env['SESSIONFOLD_PG_URL'];
if (url === undefined) {
  console.info('set SESSIONFOLD_PG_URL to measure');
  process.exit(0);
}
const total = Number(process.argv[2] ?? 100_000);
const schema = `sf_measure_${randomBytes(4).toString('hex')}`;
const admin = new pg.Pool({ connectionString: url, max: 2 });
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const max = (values: number[]) => Math.max(...values);

/** Delays (ms) from an append's acknowledgement by `writer` to the record reaching a follower on `reader`. */
async function followDelays(writer: PostgresEventStore, reader: PostgresEventStore, rounds: number): Promise<number[]> {
  const controller = new AbortController();
  const start = (await writer.status()).lastPosition + 1;
  const arrivals = new Map<number, number>();
  let wake: (() => void) | undefined;
  const following = (async () => {
    for await (const record of reader.follow({ fromPosition: start, signal: controller.signal })) {
      arrivals.set(record.position, performance.now());
      wake?.();
    }
  })();
  const delays: number[] = [];
  for (let n = 0; n < rounds; n++) {
    await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 80));
    const { position } = await writer.append('measure', [{ type: 'M', data: n }], { expectedRevision: 'any' });
    const acknowledged = performance.now();
    while (!arrivals.has(position)) await new Promise<void>((resolve) => (wake = resolve));
    delays.push((arrivals.get(position) as number) - acknowledged);
  }
  controller.abort();
  await following;
  return delays;
}

/** Appends per second with 64 appends in flight to 64 streams, for `seconds`. */
async function appendRate(store: PostgresEventStore, seconds: number): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let count = 0;
  await Promise.all(
    Array.from({ length: 64 }, async (_, lane) => {
      while (performance.now() < end) {
        await store.append(`rate-${lane}`, [{ type: 'R', data: { lane } }], { expectedRevision: 'any' });
        count++;
      }
    }),
  );
  return count / seconds;
}

try {
  const writer = await postgresStore({ connectionString: url, schema });
  const reader = await postgresStore({ connectionString: url, schema });
  const notified = await followDelays(writer, reader, 40);
  console.log(`follow, NOTIFY: median ${median(notified).toFixed(1)} ms, max ${max(notified).toFixed(1)} ms`);
  await admin.query(`ALTER TABLE "${schema}".events DISABLE TRIGGER feed_changed`);
  const polled = await followDelays(writer, reader, 20);
  console.log(`follow, polling only: median ${median(polled).toFixed(1)} ms, max ${max(polled).toFixed(1)} ms`);
  await admin.query(`ALTER TABLE "${schema}".events ENABLE TRIGGER feed_changed`);

  for (let written = 0; written < total; written += 1000) {
    const stream = `bulk-${written % 97}`;
    await writer.append(
      stream,
      Array.from({ length: 1000 }, (_, n) => ({ type: 'B', data: { n, text: 'x'.repeat(40) } })),
      { expectedRevision: 'any' },
    );
  }
  const started = performance.now();
  const report = await writer.verify();
  console.log(`verify: ${report.checked.records} records in ${(performance.now() - started).toFixed(0)} ms, ok ${report.ok}`);

  const plain = await appendRate(writer, 3);
  const observed = await postgresStore({ connectionString: url, schema, observer: { appendCommitted: () => undefined, flushed: () => undefined } });
  const withObserver = await appendRate(observed, 3);
  console.log(`appends/s, 64 in flight: ${plain.toFixed(0)} without an observer, ${withObserver.toFixed(0)} with one`);
  await Promise.all([writer.close(), reader.close(), observed.close()]);
} finally {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
