import { join } from 'node:path';
import { expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { freshDir } from './test-support.fixture.js';

it('the README example runs as written', async () => {
  const directory = freshDir();
  const log: unknown[] = [];
  const console = { log: (...values: unknown[]) => log.push(values) };
  // #region readme
  const store = sqliteStore({ path: join(directory, 'sessions.db') });
  await store.append('session-1', [{ type: 'Started', data: { by: 'ada' } }], { expectedRevision: 'no_stream' });
  await store.append('session-1', [{ type: 'Noted', data: { text: 'hello' }, eventId: 'note-1' }], { expectedRevision: 1 });
  const { revision, events } = await store.read('session-1');
  for await (const event of events) console.log(event.revision, event.type);
  console.log('at revision', revision);
  await store.close();
  // #endregion readme
  expect(log).toEqual([
    [1, 'Started'],
    [2, 'Noted'],
    ['at revision', 2],
  ]);
});
