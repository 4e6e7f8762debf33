import { afterEach, describe, expect, it, vi } from 'vitest';
import { StorageError } from '../kernel/errors.js';
import { memoryStore, type EventStore } from '../kernel/index.js';
import { sessionStream } from './ids.js';
import type { SessionHistoryObserver } from './observer.js';
import { interleavingStore, openTestHistory, startConversation } from './test-support.fixture.js';

/** An observer that records every hook call as [hook, argument]. */
function recording(): { observer: Required<SessionHistoryObserver>; calls: [string, Record<string, unknown>][] } {
  const calls: [string, Record<string, unknown>][] = [];
  const record = (hook: string) => (value: object) => void calls.push([hook, value as Record<string, unknown>]);
  return {
    calls,
    observer: {
      appendCommitted: record('appendCommitted'),
      compaction: record('compaction'),
      conflictRetried: record('conflictRetried'),
      projectionCaughtUp: record('projectionCaughtUp'),
      checkpointLoaded: record('checkpointLoaded'),
      checkpointIgnored: record('checkpointIgnored'),
      checkpointSaved: record('checkpointSaved'),
      followFailed: record('followFailed'),
    },
  };
}

const of = (calls: [string, Record<string, unknown>][], hook: string) => calls.filter(([name]) => name === hook).map(([, value]) => value);

describe('the service observer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('hears of each committed append, with the calls it carried, and of each catch-up that applied changes', async () => {
    const { observer, calls } = recording();
    // Without the background follow, only the catch-up of the query below applies another service's changes.
    const { history, store } = await openTestHistory({ observer, compaction: false, follow: false });
    const { history: other } = await openTestHistory({ store, compaction: false, follow: false });
    const session = await startConversation(history, 'observed');
    const stream = sessionStream(session.id);
    await Promise.all(Array.from({ length: 10 }, (_, index) => history.appendTranscript(session.id, { role: 'user-message', text: `${index}` })));
    const appends = of(calls, 'appendCommitted').filter((append) => append.stream === stream);
    expect(appends.reduce((sum, append) => sum + (append.events as number), 0)).toBe(11);
    expect(appends.reduce((sum, append) => sum + (append.calls as number), 0)).toBe(11);
    expect(appends.at(-1)).toMatchObject({ stream, revision: 11, durationMs: expect.any(Number) });
    expect(appends.length).toBeLessThan(11);

    // This service's own appends were applied as they committed: the query has nothing to catch up on.
    const caughtUp = of(calls, 'projectionCaughtUp').length;
    expect((await history.list()).map((record) => record.id)).toEqual([session.id]);
    expect(of(calls, 'projectionCaughtUp').length).toBe(caughtUp);

    // Another service's start and three transcript lines are read from the feed by the next query, once.
    const another = await startConversation(other, 'elsewhere');
    for (let index = 0; index < 3; index++) await other.appendTranscript(another.id, { role: 'user-message', text: `${index}` });
    expect((await history.list()).map((record) => record.id).sort()).toEqual([session.id, another.id].sort());
    expect(of(calls, 'projectionCaughtUp').slice(caughtUp)).toEqual([{ changes: 4, position: 15, durationMs: expect.any(Number), source: 'catch-up' }]);
    await history.list();
    expect(of(calls, 'projectionCaughtUp').length).toBe(caughtUp + 1);
    await other.close();
  });

  it('hears of each conflict retried and of each compaction, done or failed', async () => {
    const { observer, calls } = recording();
    const inner = memoryStore();
    const racing = interleavingStore(inner);
    let failNext = false;
    const store: EventStore = {
      ...racing.store,
      compact: async (stream, snapshot) => {
        if (failNext) throw new StorageError('disk full');
        return inner.compact(stream, snapshot);
      },
    };
    const { history } = await openTestHistory({ store, observer, compaction: { everyEvents: 3, keepEvents: 1 } });
    const { history: other } = await openTestHistory({ store: inner, compaction: false });
    const session = await startConversation(history, 'observed');
    const stream = sessionStream(session.id);
    await history.appendTranscript(session.id, { role: 'user-message', text: 'one' });
    // Another process gets in before each of the next two appends.
    racing.beforeNextAppend(() => other.appendTranscript(session.id, { role: 'user-message', text: 'theirs 1' }));
    racing.beforeNextAppend(() => other.appendTranscript(session.id, { role: 'user-message', text: 'theirs 2' }));
    await history.appendTranscript(session.id, { role: 'user-message', text: 'two' });
    expect(of(calls, 'conflictRetried')).toEqual([
      { stream, attempt: 1 },
      { stream, attempt: 2 },
    ]);
    await history.close();
    expect(of(calls, 'compaction')).toEqual([{ stream, revision: 4, droppedEvents: 4, durationMs: expect.any(Number) }]);

    const { history: failing } = await openTestHistory({ store, observer, compaction: { everyEvents: 3, keepEvents: 1 } });
    failNext = true;
    for (let line = 0; line < 4; line++) await failing.appendTranscript(session.id, { role: 'user-message', text: `${line}` });
    await failing.close();
    // Due at revision 6 (this service never saw the stream's snapshot), failed, and not due again by revision 9.
    expect(of(calls, 'compaction').slice(1)).toMatchObject([
      {
        stream,
        revision: 6,
        droppedEvents: 0,
        error: { code: 'internal_error', cause: expect.any(StorageError) },
      },
    ]);
  });

  it('a throwing observer, or one whose promise rejects, never breaks a call', async () => {
    const throwing = () => {
      throw new Error('observer bug');
    };
    const rejecting = () => Promise.reject(new Error('observer bug'));
    for (const hook of [throwing, rejecting]) {
      const observer = { appendCommitted: hook, compaction: hook, conflictRetried: hook, projectionCaughtUp: hook } as SessionHistoryObserver;
      const { history } = await openTestHistory({ observer, compaction: { everyEvents: 1, keepEvents: 0 } });
      const session = await startConversation(history, 'safe');
      await expect(history.appendTranscript(session.id, { role: 'user-message', text: 'x' })).resolves.toMatchObject({ boxId: 1 });
      await expect(history.list()).resolves.toHaveLength(1);
      await history.close();
    }
  });

  it('logs nothing by default, and refuses an observer that is not an object of functions', async () => {
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((method) => vi.spyOn(console, method));
    const { history } = await openTestHistory({ compaction: { everyEvents: 1, keepEvents: 0 } });
    const session = await startConversation(history, 'quiet');
    await history.appendTranscript(session.id, { role: 'user-message', text: 'x' });
    await history.list();
    await history.close();
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    for (const observer of ['console', { appendCommitted: 'log' }]) {
      await expect(openTestHistory({ observer: observer as never })).rejects.toMatchObject({ code: 'invalid_request', field: 'observer' });
    }
  });
});
