import { describe, expect, it } from 'vitest';
import { compactStreamKeeping } from '../kernel/fold.js';
import { memoryStore } from '../kernel/index.js';
import { sessionStream } from './ids.js';
import { sessionReducer } from './reducer.js';
import { replaySession } from './replay.js';
import { openTestHistory, startConversation } from './test-support.fixture.js';

describe('replaySession toRevision', () => {
  it('returns the record as get returned it right after the event at that revision', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store });
    const record = await startConversation(history, 'stepwise');
    const seen = [await history.get(record.id)];
    await history.appendTranscript(record.id, { role: 'user-message', text: 'first' });
    seen.push(await history.get(record.id));
    await history.appendTranscript(record.id, { role: 'assistant-message', text: 'second' });
    seen.push(await history.get(record.id));
    await history.checkpoint(record.id, { expectedVersion: 1, data: { step: 3 } });
    seen.push(await history.get(record.id));

    for (const [index, expected] of seen.entries()) {
      expect(await replaySession(store, record.id, { toRevision: index + 1 })).toEqual(expected);
    }
    // Past the head: the whole stream.
    expect(await replaySession(store, record.id, { toRevision: 99 })).toEqual(seen[3]);
  });

  it('folds from the snapshot and refuses a revision that compaction dropped', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store, compaction: false });
    const record = await startConversation(history, 'compacted');
    for (const text of ['a', 'b', 'c', 'd']) await history.appendTranscript(record.id, { role: 'user-message', text });
    const before = [];
    for (const revision of [3, 4, 5]) before.push(await replaySession(store, record.id, { toRevision: revision }));
    // Five events, the newest two kept: the snapshot covers revision 3.
    await compactStreamKeeping(store, sessionStream(record.id), sessionReducer, 2);

    const after = [];
    for (const revision of [3, 4, 5]) after.push(await replaySession(store, record.id, { toRevision: revision }));
    expect(after).toEqual(before);
    await expect(replaySession(store, record.id, { toRevision: 2 })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/revision 2 .* was compacted/),
    });
    await expect(replaySession(store, record.id, { toRevision: 0 })).rejects.toMatchObject({ code: 'invalid_request' });
  });
});
