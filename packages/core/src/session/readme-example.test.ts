import { expect, it, vi } from 'vitest';
import { memoryStore, openSessionHistory } from '../index.js';

it('the README example runs and ends with the session archived', async () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  // #region readme-example
  const history = await openSessionHistory({ store: memoryStore() });
  const { value: session } = await history.start({ idempotencyId: 'chat-42', startedAt: new Date().toISOString(), sessionType: 'conversation' });
  await history.appendTranscript(session.id, { role: 'user-message', text: 'Hello!' });
  const { value: command } = await history.enqueue(session.id, { idempotencyId: 'msg-1', kind: 'message', payload: { text: 'Hello!' } });
  await history.claimCommand(command.id);
  await history.completeCommand(command.id, { outcome: { replied: true } });
  const saved = await history.checkpoint(session.id, { expectedVersion: session.version, state: { sessionType: 'conversation', pendingTurn: false } });
  const done = await history.complete(session.id, { expectedVersion: saved.version, state: { ...saved.state, sessionObjectId: 'archive-1' } });
  console.log(
    done.phase,
    (await history.list()).map((record) => record.id),
  ); // complete [ 'archive-1' ]
  // #endregion readme-example
  expect(log).toHaveBeenCalledWith('complete', ['archive-1']);
  log.mockRestore();
});

it('the README shows exactly the code of that example', async () => {
  const { readFile } = await import('node:fs/promises');
  const source = await readFile(new URL(import.meta.url), 'utf8');
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  const region = /\/\/ #region readme-example\n([\s\S]*?)\n\s*\/\/ #endregion/.exec(source)?.[1] ?? '';
  const lines = region.split('\n').map((line) => line.trim());
  expect(lines.length).toBeGreaterThan(5);
  expect(readme).toContain(lines.join('\n'));
});
