// A process killed while it writes: opens the service on a file or SQLite store with a checkpoint every few
// changes, starts sessions with a command each, and after every acknowledged call prints how many sessions
// it has started, so its parent can kill it (SIGKILL) between two checkpoint saves.
import { join } from 'node:path';
import { openSessionHistory, type EventStore } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';

const [kind, dir] = process.argv.slice(2) as [string, string];
const store: EventStore = kind === 'file' ? await fileStore({ directory: join(dir, 'store') }) : await sqliteStore({ path: join(dir, 'store.db') });
const history = await openSessionHistory({ store, checkpoints: { everyChanges: 7 } });

for (let index = 0; ; index++) {
  const { value } = await history.start({ idempotencyId: `crash-${index}`, startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' });
  await history.enqueue(value.id, { idempotencyId: `command-${index}`, kind: 'message' });
  // A query makes the projection catch up, which is what counts changes towards the next save.
  await history.commandHeads();
  process.stdout.write(`${index + 1}\n`);
}
