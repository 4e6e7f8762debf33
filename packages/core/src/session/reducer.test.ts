import { describe, expect, it } from 'vitest';
import { compactStream, foldStream } from '../kernel/fold.js';
import { memoryStore } from '../kernel/index.js';
import type { RecordedEvent } from '../kernel/port.js';
import { sessionEvent, type SessionEvent } from './events.js';
import { sessionStream } from './ids.js';
import { applySessionEvent, initialSessionState, LOG_CHUNK_SIZE, logEntries, logEntry, sessionReducer } from './reducer.js';
import { openTestHistory, startConversation, openArchiveHistory } from './test-support.fixture.js';

const SESSION = '9078bb6e-0931-4477-9ce9-b1430d0335a2';
const AT = '2026-07-24T00:00:00.000Z';

function recorded(event: SessionEvent, revision: number): RecordedEvent {
  return {
    streamId: sessionStream(SESSION),
    type: event.type,
    data: event.data as RecordedEvent['data'],
    revision,
    position: revision,
    recordedAt: AT,
    schemaVersion: 1,
  };
}

describe('sessionReducer', () => {
  it('compacting superseded records keeps every piece of recovery state', async () => {
    const store = memoryStore();
    const { history } = await openArchiveHistory({ store });
    const record = await startConversation(history, 'control-compaction');
    const id = record.id;
    const stream = sessionStream(id);
    await history.checkpoint(id, {
      expectedVersion: 1,
      state: {
        sessionType: 'conversation',
        boxes: { '1': { text: 'x'.repeat(20_000) } },
        events: [{ kind: 'old presentation' }],
        transcriptText: 'x'.repeat(20_000),
      },
    });
    const command = (await history.enqueue(id, { idempotencyId: 'message-1', kind: 'message', payload: { text: 'hello' } })).value;
    await history.claimCommand(command.id);
    await history.checkpoint(id, {
      expectedVersion: 2,
      state: {
        sessionType: 'conversation',
        pendingTurn: true,
        historyIngress: {
          format: 'session-file',
          sessionType: 'history-ingress',
          completed: true,
          commitReceipt: { sessionObjectId: 'A1234567' },
          boxes: { '2': { text: 'y'.repeat(20_000) } },
          transcriptText: 'y'.repeat(20_000),
        },
      },
    });
    await history.completeCommand(command.id, { outcome: { accepted: true } });
    const before = await foldStream(store, stream, sessionReducer);
    const viewBefore = await history.get(id);

    expect(await compactStream(store, stream, sessionReducer)).toBe(6);

    const read = await store.read(stream);
    const remaining: RecordedEvent[] = [];
    for await (const event of read.events) remaining.push(event);
    expect(remaining).toEqual([]);
    expect(JSON.stringify(read.snapshot?.state).length).toBeLessThan(2_000);
    const after = await foldStream(store, stream, sessionReducer);
    expect(after).toEqual(before);
    const restored = after.state.record;
    expect(restored?.version).toBe(3);
    expect(restored?.state.pendingTurn).toBe(true);
    for (const field of ['boxes', 'events', 'context', 'transcriptText']) expect(restored?.state).not.toHaveProperty(field);
    expect(restored?.state.historyIngress).toEqual({
      format: 'session-file',
      sessionType: 'history-ingress',
      completed: true,
      commitReceipt: { sessionObjectId: 'A1234567' },
    });
    expect(after.state.commands).toHaveLength(1);
    expect(after.state.commands[0]).toMatchObject({ id: command.id, status: 'complete', outcome: { accepted: true } });
    expect(await history.get(id)).toEqual(viewBefore);
  });

  it('keeps a long log in chunks and finds every entry by its box id', () => {
    let state = initialSessionState(SESSION);
    const count = LOG_CHUNK_SIZE * 2 + 7;
    for (let i = 1; i <= count; i++) state = applySessionEvent(state, sessionEvent('TranscriptAppended', { at: AT, role: 'user-message', text: `line ${i}` }));
    expect(state.log.map((chunk) => chunk.length)).toEqual([LOG_CHUNK_SIZE, LOG_CHUNK_SIZE, 7]);
    expect(logEntries(state).map((entry) => entry.boxId)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    expect(logEntry(state, LOG_CHUNK_SIZE + 1)?.text).toBe(`line ${LOG_CHUNK_SIZE + 1}`);
    expect(logEntry(state, count + 1)).toBeUndefined();
    expect(state.firstUserMessage).toBe('line 1');
  });

  it('does not change the state it is given', () => {
    const started = applySessionEvent(initialSessionState(SESSION), sessionEvent('SessionStarted', { at: AT, startedAt: AT, state: { a: 1 } }));
    const copy = structuredClone(started);
    applySessionEvent(started, sessionEvent('SessionCheckpointed', { at: AT, state: { a: 2 }, userActivity: true }));
    applySessionEvent(started, sessionEvent('TranscriptAppended', { at: AT, role: 'user-message', text: 'x' }));
    expect(started).toEqual(copy);
  });

  it('ignores lifecycle changes before the session exists and commands it does not have', () => {
    const empty = initialSessionState(SESSION);
    for (const event of [
      sessionEvent('SessionCheckpointed', { at: AT, state: {}, userActivity: false }),
      sessionEvent('IngressStarted', { at: AT, provenanceId: 'p' }),
      sessionEvent('CommandClaimed', { at: AT, commandId: 'missing' }),
      sessionEvent('CommandCompleted', { at: AT, commandId: 'missing', outcome: {} }),
    ]) {
      expect(applySessionEvent(empty, event)).toEqual(empty);
    }
  });

  it('reports a stored event that is not a session event as corruption naming the stream and revision', () => {
    const state = initialSessionState(SESSION);
    const unknown = { ...recorded(sessionEvent('IngressStarted', { at: AT, provenanceId: 'p' }), 3), type: 'SessionPaused' };
    expect(() => sessionReducer.apply(state, unknown)).toThrow(
      expect.objectContaining({ code: 'corruption', line: 3, message: expect.stringContaining('SessionPaused') }),
    );
    const malformed = { ...recorded(sessionEvent('IngressStarted', { at: AT, provenanceId: 'p' }), 4), data: { at: AT } };
    expect(() => sessionReducer.apply(state, malformed)).toThrow(
      expect.objectContaining({ code: 'corruption', message: expect.stringContaining('provenanceId') }),
    );
  });

  it('refuses a snapshot whose state does not match the session state schema', () => {
    expect(() => sessionReducer.fromSnapshot({ sessionId: SESSION })).toThrow(expect.objectContaining({ code: 'corruption' }));
    const state = applySessionEvent(initialSessionState(SESSION), sessionEvent('SessionStarted', { at: AT, startedAt: AT, state: {} }));
    expect(sessionReducer.fromSnapshot(sessionReducer.toSnapshot(state))).toEqual(state);
  });
});

describe('replaySession', () => {
  it('rebuilds from the stream alone exactly the record the service returns', async () => {
    const { replaySession } = await import('./replay.js');
    const store = memoryStore();
    const { history } = await openTestHistory({ store });
    const record = await startConversation(history, 'replayed');
    await history.appendTranscript(record.id, { role: 'user-message', text: 'hello' });
    await history.enqueue(record.id, { idempotencyId: 'm', kind: 'message' });
    const checkpointed = await history.checkpoint(record.id, {
      expectedVersion: 1,
      state: { sessionType: 'conversation', pendingTurn: true },
      userActivity: true,
    });

    expect(await replaySession(store, record.id)).toEqual(checkpointed);
    expect(await replaySession(store, '00000000-0000-4000-8000-000000000000')).toBeUndefined();
    await expect(replaySession(store, 'nope')).rejects.toMatchObject({ code: 'invalid_request', message: 'invalid session ID' });
  });

  it.each([
    ['kept', {}, true],
    ['archive-and-delete', { completion: 'archive-and-delete' as const }, false],
  ])('replays a session completed under the %s policy as get returns it, or finds nothing once it was handed over', async (_name, policy, kept) => {
    const { replaySession } = await import('./replay.js');
    const store = memoryStore();
    const { history } = await openTestHistory({ store, ...policy });
    const record = await startConversation(history, 'replayed-done');
    await history.appendTranscript(record.id, { role: 'user-message', text: 'bye' });
    await history.checkpoint(record.id, { expectedVersion: 1, data: { notes: ['kept'] } });
    await history.complete(record.id, { expectedVersion: 2, state: { ...record.state, sessionObjectId: 'replayed-object' } });
    const replayed = await replaySession(store, record.id);
    if (kept) {
      expect(replayed).toEqual(await history.get(record.id));
      expect(replayed).toMatchObject({ phase: 'complete', data: { notes: ['kept'] } });
    } else expect(replayed).toBeUndefined();
  });
});

describe('events written before application data and kept completions existed', () => {
  it('fold to the record they folded to before, with no data, and a completion deletes the stream', async () => {
    const store = memoryStore();
    const stream = sessionStream('6f1c2a8e-0000-4000-8000-000000000001');
    await store.append(
      stream,
      [
        { type: 'SessionStarted', data: { at: AT, startedAt: AT, state: { sessionType: 'conversation', startIdempotencyId: 'old' } } },
        { type: 'SessionCheckpointed', data: { at: AT, state: { sessionType: 'conversation' }, userActivity: false } },
        {
          type: 'SessionCompleted',
          data: { at: AT, state: { sessionType: 'conversation', sessionObjectId: 'old-object' }, receipt: { sessionObjectId: 'old-object' } },
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    const { state } = await foldStream(store, stream, sessionReducer);
    expect(state).toMatchObject({ data: null, kept: false, lastActivityAt: AT, receipt: { sessionObjectId: 'old-object' } });
    // A service opened with the default policy finishes the old completion the way it was made: receipt, then deletion.
    const { history } = await openTestHistory({ store });
    expect((await foldStream(store, stream, sessionReducer)).exists).toBe(false);
    expect((await history.get('old-object')).state).toMatchObject({ sessionObjectId: 'old-object' });
  });
});
