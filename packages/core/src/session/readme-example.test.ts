import { expect, it, vi } from 'vitest';
import { memoryStore, openSessionHistory } from '../index.js';

it('the README example runs, and the completed session stays readable with its transcript and data', async () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  // #region readme-example
  const history = await openSessionHistory({ store: memoryStore() });
  try {
    const { value: session } = await history.start({
      idempotencyId: 'chat-42',
      startedAt: new Date().toISOString(),
      sessionType: 'conversation',
      data: { topic: 'greetings' },
    });
    await history.appendTranscript(session.id, { role: 'user-message', text: 'Hello!' });
    const { value: command } = await history.enqueue(session.id, { idempotencyId: 'msg-1', kind: 'message', payload: { text: 'Hello!' } });
    await history.claimCommand(command.id);
    await history.appendTranscript(session.id, { role: 'assistant-message', text: 'Hi! How can I help?' });
    await history.completeCommand(command.id, { outcome: { replied: true } });
    const saved = await history.checkpoint(session.id, { expectedVersion: session.version, data: { topic: 'greetings', turns: 1 } });
    const done = await history.complete(session.id, { expectedVersion: saved.version });
    const kept = await history.get(session.id); // completed, and still readable: transcript, commands, data
    const listed = await history.list({ phase: 'complete' });
    console.log(
      done.phase,
      listed[0]?.id === session.id,
      kept.state.transcript.map((line) => line.content),
      kept.data,
    );
    // complete true [ 'Hello!', 'Hi! How can I help?' ] { topic: 'greetings', turns: 1 }
  } finally {
    await history.close();
  }
  // #endregion readme-example
  expect(log).toHaveBeenCalledWith('complete', true, ['Hello!', 'Hi! How can I help?'], { topic: 'greetings', turns: 1 });
  log.mockRestore();
});

it('the README’s observer example logs appends, catch-ups and compactions to the console', async () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  // #region observer-example
  const observed = await openSessionHistory({
    store: memoryStore(),
    compaction: { everyEvents: 2, keepEvents: 1 },
    observer: {
      appendCommitted: ({ stream, events, calls, durationMs }) =>
        console.log(`append ${stream}: ${events} events of ${calls} calls, ${durationMs.toFixed(1)} ms`),
      conflictRetried: ({ stream, attempt }) => console.warn(`${stream} changed concurrently (attempt ${attempt})`),
      compaction: ({ stream, revision, droppedEvents, error }) =>
        error
          ? console.error(`compaction of ${stream} failed`, error.cause)
          : console.log(`compacted ${stream} at ${revision}: ${droppedEvents} events dropped`),
      projectionCaughtUp: ({ changes, durationMs }) => console.log(`projection applied ${changes} changes, ${durationMs.toFixed(1)} ms`),
    },
  });
  const { value: chat } = await observed.start({ idempotencyId: 'chat-7', startedAt: new Date().toISOString(), sessionType: 'conversation' });
  await Promise.all(['Hi', 'there', '!'].map((text) => observed.appendTranscript(chat.id, { role: 'user-message', text })));
  await observed.list();
  await observed.close();
  // #endregion observer-example
  const lines = log.mock.calls.map(([line]) => String(line));
  expect(lines).toContainEqual(expect.stringMatching(/^append session-.*: 3 events of 3 calls, /));
  expect(lines).toContainEqual(expect.stringMatching(/^projection applied \d+ changes, /));
  expect(lines).toContainEqual(expect.stringMatching(/^compacted session-.* at 3: 3 events dropped$/));
  log.mockRestore();
});

it.each([
  ['readme-example', import.meta.url],
  ['observer-example', import.meta.url],
  ['versioning-example', new URL('../kernel/versioning-example.test.ts', import.meta.url).href],
  ['typed-events-example', new URL('../kernel/typed-events.test.ts', import.meta.url).href],
  ['readme-capabilities', new URL('../kernel/readme-capabilities.test.ts', import.meta.url).href],
])('the README shows exactly the code of the %s region', async (name, file) => {
  const { readFile } = await import('node:fs/promises');
  const source = await readFile(new URL(file), 'utf8');
  // Indentation may differ (the README's blocks start at the margin): lines are compared trimmed on both sides.
  const readme = (await readFile(new URL('../../README.md', import.meta.url), 'utf8'))
    .split('\n')
    .map((line) => line.trim())
    .join('\n');
  const region = new RegExp(`// #region ${name}\\n([\\s\\S]*?)\\n\\s*// #endregion`).exec(source)?.[1] ?? '';
  const lines = region.split('\n').map((line) => line.trim());
  expect(lines.length).toBeGreaterThan(5);
  expect(readme).toContain(lines.join('\n'));
});
