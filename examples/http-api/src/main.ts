import { openSessionHistory } from '@sessionfold/core';
import { listen } from './http-api.js';
import { openStore } from './open-store.js';

// The store is named on the command line or by SESSIONFOLD_STORE (file:DIR, sqlite:FILE or a directory);
// HOST and PORT say where to listen (PORT=0 picks a free port).
const storeUrl = process.argv[2] ?? process.env['SESSIONFOLD_STORE'] ?? 'file:http-api-data';
const { store, description } = await openStore(storeUrl);
const history = await openSessionHistory({ store });
const api = await listen(history, {
  host: process.env['HOST'] ?? '127.0.0.1',
  port: Number(process.env['PORT'] ?? 3000),
  onInternalError: (error) => console.error('internal error:', error instanceof Error && error.cause !== undefined ? error.cause : error),
});
console.log(`sessionfold HTTP API on ${api.url} (${description})`);

let shuttingDown = false;
async function shutDown(signal: NodeJS.Signals): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  console.log(`${signal}: no new connections; finishing ${api.inFlight()} request(s) in flight`);
  await api.close();
  // Only now: a request in flight still needed the service and the store.
  await history.close();
  await store.close();
  console.log('closed the service and the store');
  process.exit(0);
}
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.on(signal, (received) => {
    shutDown(received).catch((error: unknown) => {
      console.error('shutdown failed:', error);
      process.exit(1);
    });
  });
