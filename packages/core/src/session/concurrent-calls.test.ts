import { describe, expect, it } from 'vitest';
import { foldStream } from '../kernel/fold.js';
import { ConcurrencyError, memoryStore, type EventStore } from '../kernel/index.js';
import { sessionStream } from './ids.js';
import { sessionReducer } from './reducer.js';
import { interleavingStore, openTestHistory, startConversation } from './test-support.fixture.js';

const START = { startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' };

/** Settles every promise and returns the rejections. */
async function failures(calls: Promise<unknown>[]): Promise<unknown[]> {
  return (await Promise.allSettled(calls)).flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
}

describe('SessionHistory under concurrent calls', () => {
  it('100 concurrent transcript lines and enqueues on one session all succeed, each exactly once', async () => {
    const { history, store } = await openTestHistory();
    const { id } = await startConversation(history, 'busy');

    const calls = Array.from({ length: 100 }, (_, index) =>
      index % 2 === 0
        ? history.appendTranscript(id, { role: 'user-message', text: `line ${index}` })
        : history.enqueue(id, { idempotencyId: `command-${index}`, kind: 'message' }),
    );

    expect(await failures(calls)).toEqual([]);
    const record = await history.get(id);
    const lines = (record.state.events as { text: string }[]).map((entry) => entry.text).sort();
    expect(lines).toEqual(Array.from({ length: 50 }, (_, index) => `line ${index * 2}`).sort());
    const { state } = await foldStream(store, sessionStream(id), sessionReducer);
    expect(state.commands.map((command) => command.idempotencyId).sort()).toEqual(Array.from({ length: 50 }, (_, index) => `command-${index * 2 + 1}`).sort());
    expect(state.commands.map((command) => command.sequence).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
  });

  it('concurrent starts with one key give every caller the same session, exactly one of them created', async () => {
    const { history } = await openTestHistory();

    const results = await Promise.all(Array.from({ length: 20 }, () => history.start({ idempotencyId: 'same', ...START })));

    expect(new Set(results.map((result) => result.value.id)).size).toBe(1);
    expect(results.filter((result) => result.created)).toHaveLength(1);
    expect(await history.list()).toHaveLength(1);
  });

  it('two services on one store absorb each other’s concurrent calls on one session', async () => {
    const store = memoryStore();
    const { history: a } = await openTestHistory({ store });
    const { history: b } = await openTestHistory({ store });
    const { id } = await startConversation(a, 'shared');

    const calls = Array.from({ length: 60 }, (_, index) => (index % 2 === 0 ? a : b).appendTranscript(id, { role: 'user-message', text: `line ${index}` }));

    expect(await failures(calls)).toEqual([]);
    expect(((await a.get(id)).state.events as unknown[]).length).toBe(60);
  });

  it('backs off between retries with the injected source of randomness', async () => {
    const inner = memoryStore();
    const { history: setup } = await openTestHistory({ store: inner });
    const { id } = await startConversation(setup, 'conflicted');
    let conflicts = 3;
    const store: EventStore = {
      ...inner,
      append: async (stream, events, options) => {
        if (conflicts-- > 0) throw new ConcurrencyError(stream, 1, 2);
        return inner.append(stream, events, options);
      },
    };
    let draws = 0;
    const { history } = await openTestHistory({
      store,
      random: () => {
        draws++;
        return 0.5;
      },
    });

    await expect(history.appendTranscript(id, { role: 'user-message', text: 'x' })).resolves.toMatchObject({ boxId: 1 });
    expect(draws).toBe(3);
  });

  it('after a start, enqueue → claim → complete → checkpoint read neither the session stream again nor the change feed', async () => {
    const counting = interleavingStore(memoryStore());
    const { history } = await openTestHistory({ store: counting.store });
    const session = await startConversation(history, 'round-trip');
    const [reads, feedReads] = [counting.reads(), counting.feedReads()];
    const { value: command } = await history.enqueue(session.id, { idempotencyId: 'c', kind: 'message' });
    await history.claimCommand(command.id);
    await expect(history.completeCommand(command.id, { outcome: { ok: true } })).resolves.toMatchObject({ status: 'complete' });
    await expect(history.checkpoint(session.id, { expectedVersion: 1, state: {} })).resolves.toMatchObject({ version: 2 });
    expect([counting.reads() - reads, counting.feedReads() - feedReads]).toEqual([0, 0]);
  });
});
