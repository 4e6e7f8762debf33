// A script whose main throws before it closes anything: opens a store and the service on it (following the
// store's feed), starts a session, records a line, and throws; the script reports the error and sets the exit
// code, as scripts do, instead of crashing. Nothing it opened may keep the process alive, so it must exit by
// itself. With `view`, it also opens a read-only view of the store with a service following it.
import { openSessionHistory } from '@sessionfold/core';
import { openOwnedStore, type OwnedStoreKind } from '../owned-stores.fixture.js';

const [kind, where, view] = process.argv.slice(2) as [OwnedStoreKind, string, string | undefined];

async function main(): Promise<void> {
  const store = await openOwnedStore(kind, where);
  const history = await openSessionHistory({ store, follow: true });
  const { value: session } = await history.start({ idempotencyId: 'exits', startedAt: new Date().toISOString(), sessionType: 'conversation' });
  await history.appendTranscript(session.id, { role: 'user-message', text: 'Hello!' });
  if (view === 'view') {
    const looking = await openSessionHistory({ store: await openOwnedStore(kind, where, { readOnly: true }), readOnly: true, follow: true });
    await looking.get(session.id);
  }
  process.stdout.write('started\n');
  throw new Error('main failed before close');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
