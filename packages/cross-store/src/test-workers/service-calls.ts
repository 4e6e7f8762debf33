// One process of the two-process test: opens the service on a SQLite file, waits until every worker is
// ready, starts the shared key, makes its share of calls on that session all at once, and prints one
// JSON line: the session it got, whether it created it, and every call that failed.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSessionHistory } from '@sessionfold/core';
import { sqliteStore } from '@sessionfold/store-sqlite';

const [path, worker, barrierDir, workerCount, callCount] = process.argv.slice(2) as [string, string, string, string, string];
const store = await sqliteStore({ path });
const history = await openSessionHistory({ store });

writeFileSync(join(barrierDir, worker), '');
while (readdirSync(barrierDir).length < Number(workerCount) && !existsSync(join(barrierDir, 'go'))) await new Promise((resolve) => setTimeout(resolve, 2));
writeFileSync(join(barrierDir, 'go'), '');

const started = await history.start({ idempotencyId: 'shared', startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' });
const id = started.value.id;
const results = await Promise.allSettled(
  Array.from({ length: Number(callCount) }, (_, index) =>
    index % 2 === 0
      ? history.appendTranscript(id, { role: 'user-message', text: `${worker}-${index}` })
      : history.enqueue(id, { idempotencyId: `${worker}-${index}`, kind: 'message' }),
  ),
);
const failures = results.flatMap((result) => (result.status === 'rejected' ? [String((result.reason as Error).message)] : []));
process.stdout.write(`${JSON.stringify({ worker, id, created: started.created, failures })}\n`);
await history.close();
await store.close();
