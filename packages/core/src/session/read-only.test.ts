import { describe, expect, it } from 'vitest';
import { memoryStore, type EventStore } from '../kernel/index.js';
import { messages } from './errors.js';
import { sessionStream } from './ids.js';
import { openSessionHistory } from './service.js';
import { feedLength, openTestHistory, startConversation } from './test-support.fixture.js';

/** A store whose next delete never reaches the inner store: leaves a completion half-done, as a crash would. */
function losingDeletes(inner: EventStore): EventStore {
  return { ...inner, deleteStream: async () => undefined };
}

describe('a read-only session history', () => {
  it('reads sessions and refuses every write with invalid_request, writing nothing', async () => {
    const { history, store } = await openTestHistory();
    const record = await startConversation(history, 'start-1');
    await history.enqueue(record.id, { idempotencyId: 'c-1', kind: 'message', payload: {} });
    const before = await feedLength(store);

    const reader = await openSessionHistory({ store, readOnly: true });
    expect((await reader.get(record.id)).version).toBe(1);
    expect((await reader.list()).map((listed) => listed.id)).toEqual([record.id]);
    expect(await reader.commandHeads()).toHaveLength(1);
    const refusals = [
      reader.start({ idempotencyId: 'start-2', startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' }),
      reader.enqueue(record.id, { idempotencyId: 'c-2', kind: 'message', payload: {} }),
      reader.checkpoint(record.id, { expectedVersion: 1, state: {} }),
      reader.stop(record.id),
      reader.releaseInterruptedIngress(),
      reader.recordCompletion({ sessionObjectId: 'A1' }),
      reader.deleteSession(record.id),
    ];
    for (const refusal of refusals) await expect(refusal).rejects.toMatchObject({ code: 'invalid_request', message: messages.readOnly });
    expect(await feedLength(store)).toBe(before);
  });

  it('leaves an interrupted completion as it found it', async () => {
    const inner = memoryStore();
    const { history } = await openTestHistory({ store: losingDeletes(inner) });
    const record = await startConversation(history, 'start-1');
    await history.complete(record.id, { expectedVersion: 1, state: { sessionObjectId: 'A1' } });
    const before = await feedLength(inner);

    await openSessionHistory({ store: inner, readOnly: true });
    expect(await feedLength(inner)).toBe(before);
    expect((await inner.read(sessionStream(record.id))).revision).toBeGreaterThan(0);
  });
});
