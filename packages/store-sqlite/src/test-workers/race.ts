// Races appends with expected revisions against other processes on the same file; prints one JSON line per outcome.
import { ConcurrencyError } from '@sessionfold/core/kernel';
import { sqliteStore } from '../index.js';
import { barrier } from './barrier.js';

const [path, worker, streamList, roundsText, startStream, barrierStream, workersText] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];
const streams = streamList.split(',');
const store = await sqliteStore({ path, busyTimeoutMs: 30_000 });
const say = (line: object) => process.stdout.write(`${JSON.stringify({ worker, ...line })}\n`);

await barrier(store, barrierStream, Number(workersText));

try {
  await store.append(startStream, [{ type: 'Started', data: { worker } }], { expectedRevision: 'no_stream' });
  say({ kind: 'start', won: true });
} catch (error) {
  if (!(error instanceof ConcurrencyError)) throw error;
  say({ kind: 'start', won: false, actual: error.actual });
}

for (let round = 0; round < Number(roundsText); round++) {
  const stream = streams[round % streams.length] as string;
  const expected = (await store.read(stream)).revision;
  try {
    const result = await store.append(stream, [{ type: 'Raced', data: { worker, round } }], { expectedRevision: expected === 0 ? 'no_stream' : expected });
    say({ kind: 'ack', stream, round, ...result });
  } catch (error) {
    if (!(error instanceof ConcurrencyError)) throw error;
    say({ kind: 'conflict', stream, expected, actual: error.actual });
  }
}
await store.close();
