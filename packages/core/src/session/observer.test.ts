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
      ingressStopped: record('ingressStopped'),
      storageFailed: record('storageFailed'),
    },
  };
}

const of = (calls: [string, Record<string, unknown>][], hook: string) => calls.filter(([name]) => name === hook).map(([, value]) => value);

describe('the service observer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('hears of each committed append, with the calls it carried, and of each catch-up that applied changes', async () => {
    const { observer, calls } = recording();
    // Without the background follow, only the catch-ups of the queries below apply changes.
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

    // The query reads this service's start and ten transcript lines from the feed (a start writes its session's stream only).
    const caughtUp = of(calls, 'projectionCaughtUp').length;
    expect((await history.list()).map((record) => record.id)).toEqual([session.id]);
    expect(of(calls, 'projectionCaughtUp').slice(caughtUp)).toEqual([{ changes: 11, position: 11, durationMs: expect.any(Number), source: 'catch-up' }]);

    // Another service's start and three transcript lines are read from the feed by the next query, once.
    const another = await startConversation(other, 'elsewhere');
    for (let index = 0; index < 3; index++) await other.appendTranscript(another.id, { role: 'user-message', text: `${index}` });
    expect((await history.list()).map((record) => record.id).sort()).toEqual([session.id, another.id].sort());
    expect(of(calls, 'projectionCaughtUp').slice(caughtUp + 1)).toEqual([{ changes: 4, position: 15, durationMs: expect.any(Number), source: 'catch-up' }]);
    await history.list();
    expect(of(calls, 'projectionCaughtUp').length).toBe(caughtUp + 2);
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

  it('hears of each ingress that stopped after a terminal failure: session, attempt, stage, code and reason', async () => {
    const { observer, calls } = recording();
    const { history } = await openTestHistory({ observer, ingressPolicy: { failureLimit: 2 } });
    const failing = async (idempotencyId: string, failures: { stage: string; code?: string }[]) => {
      const session = await startConversation(history, idempotencyId);
      let record = await history.requestIngress(session.id, { expectedVersion: session.version, state: session.state });
      for (const failure of failures) {
        record = await history.startIngress(session.id, { expectedVersion: record.version, provenanceId: `session:${session.id}` });
        record = await history.failIngress(session.id, { expectedVersion: record.version, message: 'failed', ...failure });
      }
      return record;
    };
    const limited = await failing('limited', [{ stage: 'model_loop' }, { stage: 'commit', code: 'timeout' }]);
    expect(limited.phase).toBe('ingress_failed');
    const tooLarge = await failing('too-large', [{ stage: 'prepare', code: 'input_too_large' }]);
    // A failure that leaves the session pending for another attempt is not a stop.
    const retrying = await failing('retrying', [{ stage: 'model_loop' }]);
    expect(retrying.phase).toBe('ingress_pending');
    expect(of(calls, 'ingressStopped')).toEqual([
      { sessionId: limited.id, attempt: 2, stage: 'commit', code: 'timeout', terminalReason: 'retry_limit' },
      { sessionId: tooLarge.id, attempt: 1, stage: 'prepare', code: 'input_too_large', terminalReason: 'non_retryable' },
    ]);
    const once = await failing('once', [{ stage: 'model_loop' }]);
    await history.startIngress(once.id, { expectedVersion: once.version, provenanceId: `session:${once.id}` });
    await history.failIngress(once.id, { expectedVersion: once.version + 1, stage: 'model_loop', message: 'no code' });
    expect(of(calls, 'ingressStopped').at(-1)).toEqual({
      sessionId: once.id,
      attempt: 2,
      stage: 'model_loop',
      code: 'ingress_error',
      terminalReason: 'retry_limit',
    });
    await history.close();
  });

  it('hears of each storage failure behind an internal_error, with the store error as its cause', async () => {
    const { observer, calls } = recording();
    const inner = memoryStore();
    let failing = false;
    const store: EventStore = {
      ...inner,
      append: async (stream, events, options) => {
        if (failing) throw new StorageError('disk full');
        return inner.append(stream, events, options);
      },
    };
    const { history } = await openTestHistory({ store, observer });
    const session = await startConversation(history, 'storage');
    failing = true;
    const refused = history.appendTranscript(session.id, { role: 'user-message', text: 'lost' });
    await expect(refused).rejects.toMatchObject({ code: 'internal_error', message: 'An unexpected Session History storage error occurred.' });
    const error = await refused.catch((reason: unknown) => reason);
    expect(of(calls, 'storageFailed')).toEqual([{ error, cause: expect.any(StorageError), source: 'call' }]);
    expect((of(calls, 'storageFailed')[0]?.cause as Error).message).toContain('disk full');
    // Errors of the caller's making are not storage failures.
    await expect(history.get('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ code: 'not_found' });
    await expect(history.appendTranscript('not-an-id', { role: 'user-message', text: 'x' })).rejects.toMatchObject({ code: 'invalid_request' });
    expect(of(calls, 'storageFailed')).toHaveLength(1);
    failing = false;
    await history.close();
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
