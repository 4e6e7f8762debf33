import { describe, expect, it } from 'vitest';
import { memoryStore } from '../kernel/index.js';
import { catalogReducer, sessionReducer } from './reducer.js';
import { foldStream } from '../kernel/fold.js';
import { sessionStream } from './ids.js';
import { DEFAULT_INGRESS_POLICY } from './ingress-policy.js';
import { openSessionHistory } from './service.js';
import { ARCHIVE_POLICIES, eventsOf, openArchiveHistory, openTestHistory, startConversation, steppingClock, streamNames } from './test-support.fixture.js';
import { DELETED_RECORD } from '../kernel/port.js';

describe('SessionHistory: transcript and commands', () => {
  it('given a session with a system error in its log, when a command is queued, then the view and the queue both show it', async () => {
    const { history, store } = await openTestHistory();
    const { id } = await startConversation(history, 'start-1');
    await history.appendTranscript(id, { role: 'system-error', text: 'The message exceeded capacity.' });

    const command = await history.enqueue(id, { idempotencyId: 'message-1', kind: 'message', payload: { text: 'hello' } });
    expect(command.value.status).toBe('pending');
    expect(command.created).toBe(true);

    const materialised = await history.get(id);
    expect(materialised.state.transcriptText).toContain('[system-error]');
    expect((materialised.state.transcript as unknown[])[0]).toEqual({ role: 'system', content: 'The message exceeded capacity.', boxId: 1 });
    expect(await history.commandHeads()).toHaveLength(1);
    // The transcript and the command queue share one stream, so one append order covers both.
    expect(await streamNames(store)).toEqual([sessionStream(id)]);
  });

  it('given a user message in the log, when a presentation-heavy state is checkpointed under the projecting policy, then the presentation is dropped and rebuilt from the log', async () => {
    const { history } = await openArchiveHistory();
    const record = await startConversation(history, 'live-ui-start');
    const id = record.id;
    await history.appendTranscript(id, { role: 'user-message', text: 'hello from the log' });

    const checkpointed = await history.checkpoint(id, {
      expectedVersion: record.version,
      state: {
        sessionId: id,
        sessionType: 'conversation',
        boxes: { '1': { id: 1, owner: { kind: 'user' }, canonical: { eventId: 1, content: { text: 'hello' } }, active: true } },
        events: [],
        context: { items: [{ boxId: 1, text: 'hello' }] },
        transcriptText: 'hello',
        historyIngress: { format: 'session-file', version: 1 },
      },
    });

    for (const view of [checkpointed, await history.get(id)]) {
      expect(view.state.boxes).toBeUndefined();
      expect(view.state.context).toBeUndefined();
      expect((view.state.transcript as { content: string }[])[0]?.content).toBe('hello from the log');
      expect((view.state.events as { role: string }[])[0]?.role).toBe('user-message');
      expect(view.state.transcriptText).toContain('hello from the log');
      expect((view.state.historyIngress as { format: string }).format).toBe('session-file');
    }
    expect(checkpointed.version).toBe(2);
  });

  it('by default, refuses a state key outside the control state, naming it and pointing to data, and ignores the view passed back', async () => {
    const { history, store } = await openTestHistory();
    const record = await startConversation(history, 'strict-state');
    await history.appendTranscript(record.id, { role: 'user-message', text: 'hello' });
    const saved = await history.get(record.id);
    await expect(history.checkpoint(record.id, { expectedVersion: saved.version, state: { ...saved.state, myAgentMemory: ['x'] } })).rejects.toMatchObject({
      code: 'invalid_request',
      field: 'state.myAgentMemory',
      message: expect.stringContaining("put the application's own data in `data`"),
    });
    expect((await store.read(sessionStream(record.id))).revision).toBe(2);
    // The view's keys come back in `{ ...saved.state }`: they are rebuilt, never stored.
    const checkpointed = await history.checkpoint(record.id, { expectedVersion: saved.version, state: { ...saved.state, pendingTurn: true } });
    expect(checkpointed.state.pendingTurn).toBe(true);
    expect(checkpointed.state.transcript).toEqual([{ role: 'user', content: 'hello', boxId: 1 }]);
    const stored = (await eventsOf(store, sessionStream(record.id))).at(-1);
    expect(Object.keys((stored?.data as { state: object }).state)).not.toContain('transcript');
    // Left out, the control state is kept.
    const kept = await history.checkpoint(record.id, { expectedVersion: checkpointed.version, data: { note: 1 } });
    expect(kept.state.pendingTurn).toBe(true);
    expect(kept.state.startIdempotencyId).toBe('strict-state');
    expect(kept.data).toEqual({ note: 1 });
  });

  it('keeps the application data as given, replaced by a value or by a function of the current one, and checks it with the validator', async () => {
    const validateData = (value: unknown): { notes: string[] } => {
      if (typeof value !== 'object' || value === null || !Array.isArray((value as { notes?: unknown }).notes)) throw new Error('notes: expected an array');
      return value as { notes: string[] };
    };
    const store = memoryStore();
    const history = await openSessionHistory({ store, clock: steppingClock(), validateData });
    const { value: started } = await history.start({ idempotencyId: 'data', startedAt: '2026-07-23T00:00:00Z', sessionType: 'chat', data: { notes: [] } });
    expect(started.data).toEqual({ notes: [] });
    const added = await history.checkpoint(started.id, {
      expectedVersion: started.version,
      data: (current) => ({ notes: [...(current?.notes ?? []), 'one'] }),
    });
    expect(added.data?.notes).toEqual(['one']);
    await expect(
      history.checkpoint(started.id, { expectedVersion: added.version, data: { other: 1 } as unknown as { notes: string[] } }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
      field: 'data',
      message: 'data: notes: expected an array',
    });
    await expect(
      history.checkpoint(started.id, { expectedVersion: added.version, data: { notes: [new Date()] } as unknown as { notes: string[] } }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
      field: 'data.notes[0]',
    });
    const reopened = await openSessionHistory({ store, validateData });
    expect((await reopened.get(started.id)).data).toEqual({ notes: ['one'] });
    expect((await reopened.list())[0]).not.toHaveProperty('data');
  });

  it('maps log roles to transcript roles and keeps box metadata', async () => {
    const { history } = await openTestHistory();
    const { id } = await startConversation(history, 'roles');
    const box = (text: string, metadata: object) => JSON.stringify({ kind: { type: 'box_created', content: { text, metadata, objects: [{ id: 'o1' }] } } });
    await history.appendTranscript(id, { role: 'user-message', text: box('boxed hello', { inputKind: 'voice', media: { kind: 'audio' } }) });
    await history.appendTranscript(id, { role: 'assistant-message', text: 'hi there' });
    await history.appendTranscript(id, { role: 'assistant-tool-call', text: '{"tool":"search"}' });
    await history.appendTranscript(id, { role: 'system-message', text: 'hidden' });
    await history.appendTranscript(id, { role: 'system-message', text: box('shown', { transcriptRole: 'system' }) });

    const view = await history.get(id);
    expect(view.state.transcript).toEqual([
      { role: 'user', content: 'boxed hello', boxId: 1, objects: [{ id: 'o1' }], inputKind: 'voice', attachments: [{ kind: 'audio' }] },
      { role: 'assistant', content: 'hi there', boxId: 2 },
      { role: 'system', content: 'shown', boxId: 5, objects: [{ id: 'o1' }] },
    ]);
    expect(view.state.transcriptText).toBe(
      '[user-message]\nboxed hello\n\n[assistant-message]\nhi there\n\n[assistant-tool-call]\n{"tool":"search"}\n\n[system-message]\nhidden\n\n[system-message]\nshown',
    );
  });

  it('given a staged object, when it is fetched, then its original name, media type and bytes come back', async () => {
    const { history } = await openTestHistory();
    const { id } = await startConversation(history, 'pending-object-start');
    const bytes = Buffer.from('\x89PNG\r\n\x1a\npayload', 'latin1');

    const pendingId = await history.stageObject(id, { fileName: 'photo.png', mediaType: 'image/png', bytes });
    expect(pendingId).toBe('pending:1');

    const object = await history.object(id, pendingId);
    expect(object.mediaType).toBe('image/png');
    expect(object.fileName).toBe('photo.png');
    expect(Buffer.from(object.bytes).equals(bytes)).toBe(true);
  });

  it('numbers staged objects by their position in the log and sanitises their name and media type on the way out', async () => {
    const { history } = await openTestHistory();
    const { id } = await startConversation(history, 'object-names');
    await history.appendTranscript(id, { role: 'user-message', text: 'first' });
    const pendingId = await history.stageObject(id, {
      fileName: 'my "report"/v2;final é.txt',
      mediaType: 'text/plain; charset=utf-8',
      bytes: new Uint8Array([1]),
    });
    const unnamed = await history.stageObject(id, { mediaType: 'png', bytes: new Uint8Array([2]) });

    expect([pendingId, unnamed]).toEqual(['pending:2', 'pending:3']);
    expect(await history.object(id, pendingId)).toMatchObject({ fileName: 'my__report__v2_final__.txt', mediaType: 'application/octet-stream' });
    expect(await history.object(id, unnamed)).toMatchObject({ fileName: 'uploaded-object', mediaType: 'application/octet-stream' });
    await expect(history.object(id, 'pending:1')).rejects.toMatchObject({ code: 'not_found', message: 'Session not found.' });
    await expect(history.object(id, 'pending:9')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('runs commands one at a time per session: claim, complete, then the next head', async () => {
    const { history } = await openTestHistory();
    const { id } = await startConversation(history, 'queue');
    const first = (await history.enqueue(id, { idempotencyId: 'm-1', kind: 'message' })).value;
    const second = (await history.enqueue(id, { idempotencyId: 'm-2', kind: 'message', payload: { n: 2 } })).value;
    expect([first.sequence, second.sequence]).toEqual([1, 2]);
    expect(first.payload).toEqual({});

    expect((await history.commandHeads()).map((command) => command.id)).toEqual([first.id]);
    await expect(history.stageObject(id, { mediaType: 'image/png', bytes: new Uint8Array([1]) })).rejects.toMatchObject({
      code: 'state_conflict',
      message: `Objects cannot be supplied while command ${first.id} is pending.`,
    });
    await expect(history.completeCommand(first.id)).rejects.toMatchObject({ code: 'state_conflict', message: 'Command was not claimed.' });
    const claimed = await history.claimCommand(first.id);
    expect(claimed).toMatchObject({ status: 'processing', processingStartedAt: expect.any(String) });
    expect(await history.claimCommand(first.id)).toEqual(claimed);
    await expect(history.stageObject(id, { mediaType: 'image/png', bytes: new Uint8Array([1]) })).rejects.toMatchObject({
      code: 'state_conflict',
      message: `Objects cannot be supplied while command ${first.id} is processing.`,
    });

    const done = await history.completeCommand(first.id, { outcome: { accepted: true } });
    expect(done).toMatchObject({ status: 'complete', outcome: { accepted: true }, completedAt: expect.any(String) });
    expect(await history.completeCommand(first.id, { outcome: { ignored: true } })).toEqual(done);
    await expect(history.claimCommand(first.id)).rejects.toMatchObject({ code: 'state_conflict', message: 'Command is already complete.' });
    expect((await history.commandHeads()).map((command) => command.id)).toEqual([second.id]);
    await expect(history.claimCommand('no-such-command')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('enqueue is idempotent per session: the same idempotency id returns the first command', async () => {
    const { history } = await openTestHistory();
    const a = await startConversation(history, 'a');
    const b = await startConversation(history, 'b');
    const first = await history.enqueue(a.id, { idempotencyId: 'message-1', kind: 'message', payload: { text: 'one' } });
    const again = await history.enqueue(a.id, { idempotencyId: 'message-1', kind: 'message', payload: { text: 'two' } });
    const elsewhere = await history.enqueue(b.id, { idempotencyId: 'message-1', kind: 'message' });

    expect(first.created).toBe(true);
    expect(again).toEqual({ value: first.value, created: false });
    expect(elsewhere.created).toBe(true);
    expect(elsewhere.value.id).not.toBe(first.value.id);
    expect(await history.commandHeads()).toHaveLength(2);
  });

  it('stop moves the session to ingress_pending whatever its version and asks open commands to cancel', async () => {
    const { history } = await openTestHistory();
    const record = await startConversation(history, 'stop');
    const command = (await history.enqueue(record.id, { idempotencyId: 'm', kind: 'message' })).value;
    const stopped = await history.stop(record.id);
    expect(stopped).toMatchObject({ phase: 'ingress_pending', provenanceId: null, version: 2 });
    expect((await history.commandHeads())[0]).toMatchObject({ id: command.id, cancelRequested: true });
    await expect(history.enqueue(record.id, { idempotencyId: 'm2', kind: 'message' })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Session is no longer active.',
    });
  });
});

describe('SessionHistory: ingress', () => {
  it('ingress failures back off, stop after five, keep the last five, and can be retried', async () => {
    const { history } = await openTestHistory();
    const created = await startConversation(history, 'ingress-retries-start');
    const id = created.id;
    let record = await history.requestIngress(id, { expectedVersion: created.version, state: created.state });

    const { failureLimit, retryDelaySeconds, retainedFailures } = DEFAULT_INGRESS_POLICY;
    for (let attempt = 1; attempt <= failureLimit; attempt++) {
      record = await history.startIngress(id, { expectedVersion: record.version, provenanceId: `session:${id}` });
      record = await history.failIngress(id, { expectedVersion: record.version, stage: 'model_loop', code: 'ingress_error', message: 'transient failure' });
      expect(record.ingressFailureCount).toBe(attempt);
      if (attempt < failureLimit) {
        expect(record.phase).toBe('ingress_pending');
        expect(Date.parse(record.ingressNextAttemptAt ?? '') - Date.parse(record.updatedAt)).toBe(retryDelaySeconds * 1000);
      } else {
        expect(record.phase).toBe('ingress_failed');
        expect(record.ingressNextAttemptAt).toBeNull();
      }
    }
    expect(record.ingressFailures).toHaveLength(retainedFailures);
    expect(record.ingressFailures[0]).toMatchObject({ attempt: 1, stage: 'model_loop', code: 'ingress_error', message: 'transient failure', roundsUsed: null });

    const retried = await history.retryIngress(id, { expectedVersion: record.version, state: record.state });
    expect(retried.phase).toBe('ingress_pending');
    expect(retried.ingressFailureCount).toBe(0);
    expect(retried.ingressNextAttemptAt).toBeNull();
  });

  it('an input_too_large failure is terminal at once', async () => {
    const { history } = await openTestHistory();
    const created = await startConversation(history, 'too-large');
    const pending = await history.requestIngress(created.id, { expectedVersion: 1, state: created.state });
    const failed = await history.failIngress(created.id, {
      expectedVersion: pending.version,
      stage: 'prepare',
      code: 'input_too_large',
      message: 'too big',
      contextTokens: 9,
    });
    expect(failed).toMatchObject({ phase: 'ingress_failed', ingressFailureCount: 1, ingressNextAttemptAt: null });
    expect(failed.ingressFailures[0]).toMatchObject({ contextTokens: 9 });
  });

  it('refuses failures outside an attempt and retries of an ingress that has not failed', async () => {
    const { history } = await openTestHistory();
    const created = await startConversation(history, 'not-in-ingress');
    await expect(history.failIngress(created.id, { expectedVersion: 1, stage: 's', message: 'm' })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Session History ingress is not in an active attempt.',
    });
    await expect(history.retryIngress(created.id, { expectedVersion: 1, state: {} })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Session History ingress is not in the failed state.',
    });
  });

  it('releasing a legacy hot loop keeps the checkpoint state, resets the count and keeps five failures', async () => {
    const { history, store } = await openTestHistory();
    const created = await startConversation(history, 'ingress-release-start');
    const id = created.id;
    const pending = await history.requestIngress(id, {
      expectedVersion: created.version,
      state: { sessionType: 'conversation', historyIngress: { archivePlan: { creates: [{ pendingId: 'pending:9' }] } } },
    });
    await history.startIngress(id, { expectedVersion: pending.version, provenanceId: `session:${id}` });

    // An older policy retried forever and kept every failure: its events replay to exactly that record.
    const stream = sessionStream(id);
    let revision = (await store.read(stream)).revision;
    for (let attempt = 1; attempt <= 150; attempt++) {
      const at = new Date(Date.UTC(2026, 6, 23, 1, 0, attempt)).toISOString();
      const failure = { attempt, at, stage: null, code: null, message: 'legacy hot loop', roundsUsed: null, contextTokens: null, contextWindowTokens: null };
      revision = (
        await store.append(
          stream,
          [
            { type: 'IngressFailed', data: { at, attempt, terminal: false, nextAttemptAt: null, failure, retainedFailures: 1000 } },
            { type: 'IngressStarted', data: { at, provenanceId: `session:${id}` } },
          ],
          { expectedRevision: revision },
        )
      ).revision;
    }
    const legacy = await history.get(id);
    expect(legacy).toMatchObject({ phase: 'ingress_in_progress', ingressFailureCount: 150 });
    expect(legacy.ingressFailures).toHaveLength(150);

    expect(await history.releaseInterruptedIngress()).toEqual([id]);
    const repaired = await history.get(id);
    expect(repaired.phase).toBe('ingress_pending');
    expect(repaired.ingressFailureCount).toBe(0);
    expect(repaired.ingressFailures).toHaveLength(DEFAULT_INGRESS_POLICY.retainedFailures);
    expect(repaired.version).toBe(legacy.version + 1);
    expect(
      (repaired.state as unknown as { historyIngress: { archivePlan: { creates: { pendingId: string }[] } } }).historyIngress.archivePlan.creates[0]?.pendingId,
    ).toBe('pending:9');
    expect(await history.releaseInterruptedIngress()).toEqual([]);
  });

  it('releasing an interrupted attempt within the limit keeps its failure count', async () => {
    const { history } = await openTestHistory();
    const created = await startConversation(history, 'interrupted');
    let record = await history.requestIngress(created.id, { expectedVersion: 1, state: created.state });
    record = await history.startIngress(created.id, { expectedVersion: record.version, provenanceId: 'p' });
    record = await history.failIngress(created.id, { expectedVersion: record.version, stage: 's', message: 'm' });
    record = await history.startIngress(created.id, { expectedVersion: record.version, provenanceId: 'p' });
    expect(await history.releaseInterruptedIngress()).toEqual([created.id]);
    expect(await history.get(created.id)).toMatchObject({ phase: 'ingress_pending', ingressFailureCount: 1, ingressNextAttemptAt: null });
  });
});

describe('SessionHistory: completion', () => {
  const nestedState = (state: Record<string, unknown>) => ({
    ...state,
    historyIngress: {
      sessionType: 'history-ingress',
      completed: true,
      sessionObjectId: 'A1234567',
      commitReceipt: { transactionId: 'T1234567', sessionObjectId: 'A1234567', nodeIds: {}, objectIds: {} },
    },
  });

  it('a nested historyIngress receipt completes the session, records the receipt and deletes the stream', async () => {
    const { history, store } = await openArchiveHistory();
    const record = await startConversation(history, 'nested-completion-start');
    const id = record.id;

    const completed = await history.complete(id, { expectedVersion: record.version, state: nestedState(record.state) });

    expect(completed.phase).toBe('complete');
    expect(completed.version).toBe(2);
    expect(completed.endedAt).toBe(completed.updatedAt);
    expect(completed.state.sessionObjectId).toBe('A1234567');
    expect((completed.state.commitReceipt as { transactionId: string }).transactionId).toBe('T1234567');
    expect(await streamNames(store)).toEqual(['catalog']);
    const catalog = await foldStream(store, 'catalog', catalogReducer);
    expect(catalog.state.receipts).toEqual([
      {
        transactionId: 'T1234567',
        sessionObjectId: 'A1234567',
        sessionId: id,
        sessionType: 'conversation',
        createdAt: '2026-07-23T00:00:00Z',
        committedAt: completed.updatedAt,
        nodeIds: {},
        objectIds: {},
      },
    ]);
    await expect(history.get(id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await history.get('A1234567')).toMatchObject({ id: 'A1234567', phase: 'complete', state: { sessionId: id } });
  });

  it('completeIngress completes with the current control state', async () => {
    const { history, store } = await openArchiveHistory();
    const record = await startConversation(history, 'complete-ingress');
    const checkpointed = await history.checkpoint(record.id, { expectedVersion: 1, state: { sessionType: 'conversation', sessionObjectId: 'B1' } });
    const completed = await history.completeIngress(record.id, { expectedVersion: checkpointed.version });
    expect(completed).toMatchObject({ phase: 'complete', state: { sessionObjectId: 'B1', commitReceipt: null } });
    expect(await streamNames(store)).toEqual(['catalog']);
  });

  it('refuses a completion without a session object or with a receipt for another object', async () => {
    const { history, store } = await openArchiveHistory();
    const record = await startConversation(history, 'bad-completion');
    await expect(history.complete(record.id, { expectedVersion: 1, state: {} })).rejects.toMatchObject({
      code: 'state_conflict',
      message:
        'completed session has no permanent session object: under the archive-and-delete completion policy, pass state.sessionObjectId (or state.historyIngress.sessionObjectId) naming the archive object',
    });
    await expect(
      history.complete(record.id, { expectedVersion: 1, state: { sessionObjectId: 'A1', commitReceipt: { sessionObjectId: 'A2' } } }),
    ).rejects.toMatchObject({ code: 'state_conflict', message: 'session commit receipt names a different archive object' });
    await expect(history.complete(record.id, { expectedVersion: 1, state: { sessionObjectId: 'A1', commitReceipt: { nodeIds: 3 } } })).rejects.toMatchObject({
      code: 'state_conflict',
      message: expect.stringMatching(/^invalid session commit receipt: /),
    });
    expect((await store.read(sessionStream(record.id))).revision).toBe(1);
  });

  it('a recorded completion appears in list() with its receipt', async () => {
    const { history, store } = await openArchiveHistory();
    await history.recordCompletion({ sessionObjectId: 'A1234567' });

    const listed = await history.list();
    expect(listed[0]?.state.sessionObjectId).toBe('A1234567');
    expect((listed[0]?.state.commitReceipt as { sessionObjectId: string }).sessionObjectId).toBe('A1234567');
    expect(listed[0]).toMatchObject({ id: 'A1234567', phase: 'complete', summary: true });
    const stored = await eventsOf(store, 'catalog');
    expect(stored).toHaveLength(1);
    expect(stored[0]?.data).toMatchObject({ receipt: { sessionObjectId: 'A1234567', committedAt: expect.any(String) } });
  });

  it('receipts are unique by session object id and recordCompletion deletes the named session', async () => {
    const { history, store } = await openArchiveHistory();
    const record = await startConversation(history, 'recorded-elsewhere');
    await history.recordCompletion({ sessionObjectId: 'C1', sessionId: record.id, sessionType: 'conversation', createdAt: record.startedAt });
    await history.recordCompletion({ sessionObjectId: 'C1', commitReceipt: { sessionObjectId: 'C1', transactionId: 'other' } });

    expect(await streamNames(store)).toEqual(['catalog']);
    const receipts = (await foldStream(store, 'catalog', catalogReducer)).state.receipts;
    expect(receipts).toHaveLength(1);
    expect(receipts[0]).toMatchObject({ sessionObjectId: 'C1', sessionId: record.id, transactionId: null, sessionType: 'conversation' });
    await expect(history.recordCompletion({ sessionObjectId: 'C2', commitReceipt: { sessionObjectId: 'C3' } })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'completion receipt and requested session object differ',
    });
  });

  it('given a crash after the completion event, when the service opens, then the receipt is recorded and the stream deleted', async () => {
    const store = memoryStore();
    const { history } = await openArchiveHistory({ store });
    const record = await startConversation(history, 'crash-before-receipt');
    const receipt = {
      transactionId: null,
      sessionObjectId: 'R1',
      sessionId: record.id,
      sessionType: 'conversation',
      createdAt: record.startedAt,
      committedAt: '2026-07-23T01:00:00.000Z',
      nodeIds: {},
      objectIds: {},
    };
    await store.append(
      sessionStream(record.id),
      [{ type: 'SessionCompleted', data: { at: '2026-07-23T01:00:00.000Z', state: { sessionObjectId: 'R1', commitReceipt: null }, receipt } }],
      { expectedRevision: 1 },
    );

    await openSessionHistory({ ...ARCHIVE_POLICIES, store });

    expect(await streamNames(store)).toEqual(['catalog']);
    expect((await foldStream(store, 'catalog', catalogReducer)).state.receipts).toEqual([receipt]);
  });

  it('given a crash between the receipt and the delete, when the service opens, then the stream is deleted and the receipt kept once', async () => {
    const inner = memoryStore();
    let failDelete = true;
    const store = {
      ...inner,
      deleteStream: async (...args: Parameters<typeof inner.deleteStream>) => {
        if (failDelete) throw new Error('disk unplugged');
        return inner.deleteStream(...args);
      },
    };
    const { history } = await openArchiveHistory({ store });
    const record = await startConversation(history, 'crash-before-delete');

    const failure = await history.complete(record.id, { expectedVersion: 1, state: { sessionObjectId: 'D1' } }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'internal_error', message: 'An unexpected Session History storage error occurred.' });
    expect((failure as Error).cause).toMatchObject({ message: 'disk unplugged' });
    expect(await streamNames(inner)).toEqual(['catalog', sessionStream(record.id)]);
    expect((await foldStream(inner, sessionStream(record.id), sessionReducer)).state.record?.phase).toBe('complete');

    // Until the delete happens the stream is gone for every change, and listed once, through its receipt.
    expect((await history.list()).map((listed) => listed.id)).toEqual(['D1']);
    await expect(history.stop(record.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(history.appendTranscript(record.id, { role: 'user-message', text: 'late' })).rejects.toMatchObject({ code: 'not_found' });

    failDelete = false;
    const reopened = await openSessionHistory({ ...ARCHIVE_POLICIES, store });
    expect(await streamNames(inner)).toEqual(['catalog']);
    expect((await eventsOf(inner, 'catalog')).length).toBe(1);
    expect((await reopened.list()).map((listed) => listed.id)).toEqual(['D1']);
  });
});

describe('SessionHistory: completion under the default policy (kept)', () => {
  it('keeps the completed session readable with its transcript, commands and objects, listed once under its id and closed to writes', async () => {
    const { history, store } = await openTestHistory();
    const record = await startConversation(history, 'kept');
    await history.appendTranscript(record.id, { role: 'user-message', text: 'hello' });
    const pendingId = await history.stageObject(record.id, { fileName: 'a.txt', mediaType: 'text/plain', bytes: new Uint8Array([1, 2]) });
    const command = (await history.enqueue(record.id, { idempotencyId: 'm-1', kind: 'message' })).value;
    await history.claimCommand(command.id);
    await history.completeCommand(command.id);
    const done = await history.complete(record.id, { expectedVersion: record.version, state: { ...record.state, sessionObjectId: 'object-1' } });
    expect(done.phase).toBe('complete');

    const read = await history.get(record.id);
    expect(read.phase).toBe('complete');
    expect(read.state.transcript.map((line) => line.content)).toEqual(['hello']);
    expect(read.state.commands.map((each) => [each.id, each.status])).toEqual([[command.id, 'complete']]);
    expect(read.state.objects.map((object) => object.pendingId)).toEqual([pendingId]);
    expect(await history.get('object-1')).toEqual(read);
    const listed = await history.list({ phase: 'complete' });
    expect(listed.map((summary) => summary.id)).toEqual([record.id]);
    expect((await history.object(record.id, pendingId)).bytes).toEqual(new Uint8Array([1, 2]));

    await expect(history.appendTranscript(record.id, { role: 'user-message', text: 'late' })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Session is in phase complete; it no longer changes.',
    });
    await expect(history.checkpoint(record.id, { expectedVersion: read.version })).rejects.toMatchObject({ code: 'state_conflict' });
    await expect(history.cancelCommand(command.id)).rejects.toMatchObject({ code: 'state_conflict' });
    // The start key is released: the next start with it is a new session.
    const next = await startConversation(history, 'kept');
    expect(next.id).not.toBe(record.id);
    expect(await history.commandHeads()).toEqual([]);
    expect((await store.read(sessionStream(record.id))).revision).toBeGreaterThan(0);
  });

  it('records the completion as version 2 of its event, which a reader knowing only version 1 refuses instead of deleting the stream', async () => {
    const { history, store } = await openTestHistory();
    const record = await startConversation(history, 'versioned-completion');
    await history.complete(record.id, { expectedVersion: record.version, state: { sessionObjectId: 'object-v2' } });
    const completed = (await eventsOf(store, sessionStream(record.id))).find((event) => event.type === 'SessionCompleted');
    expect(completed).toMatchObject({ schemaVersion: 2, data: { kept: true } });
    const { upcasters: _upcasters, ...versionOne } = sessionReducer;
    await expect(foldStream(store, sessionStream(record.id), versionOne)).rejects.toMatchObject({ code: 'schema_version_too_new' });
  });

  it('completes without a session object, writing no receipt', async () => {
    const { history } = await openTestHistory();
    const record = await startConversation(history, 'no-object');
    const done = await history.complete(record.id, { expectedVersion: record.version });
    expect(done).toMatchObject({ phase: 'complete', state: { startIdempotencyId: 'no-object' } });
    expect(done.state.sessionObjectId).toBeUndefined();
    expect((await history.list()).map((summary) => [summary.id, summary.phase])).toEqual([[record.id, 'complete']]);
    expect(projectionReceipts(await history.list())).toEqual([]);
  });

  it('deleteSession deletes a completed session for good, with the archive policy’s deletion mark, and refuses a live one', async () => {
    const { history, store } = await openTestHistory();
    const live = await startConversation(history, 'live');
    await expect(history.deleteSession(live.id)).rejects.toMatchObject({ code: 'state_conflict' });
    const record = await startConversation(history, 'to-delete');
    await history.complete(record.id, { expectedVersion: record.version, state: { sessionObjectId: 'object-2' } });
    await history.deleteSession(record.id);
    await expect(history.get(record.id)).rejects.toMatchObject({ code: 'not_found' });
    const feed = [];
    for await (const change of store.readAll()) feed.push(change);
    expect(feed.at(-1)).toMatchObject({ streamId: sessionStream(record.id), type: DELETED_RECORD });
    // What remains is the receipt, as under the archive policy.
    expect((await history.get('object-2')).state).toMatchObject({ sessionId: record.id, sessionObjectId: 'object-2' });
  });

  it('a service opened with the archive policy leaves a session completed under the kept policy as it is', async () => {
    const { history, store } = await openTestHistory();
    const record = await startConversation(history, 'kept-then-archive');
    await history.complete(record.id, { expectedVersion: record.version, state: { sessionObjectId: 'object-3' } });
    await history.close();
    const archive = await openSessionHistory({ ...ARCHIVE_POLICIES, store });
    expect((await archive.get(record.id)).phase).toBe('complete');
    expect((await archive.list()).map((summary) => summary.id)).toEqual([record.id]);
  });
});

/** The receipts' entries of a listing (named by their session object, not a session). */
function projectionReceipts(list: { id: string; state: { sessionObjectId?: string | undefined } }[]): string[] {
  return list.filter((summary) => summary.state.sessionObjectId === summary.id).map((summary) => summary.id);
}

describe('SessionHistory: what a call returns', () => {
  it('given records, commands and entries a caller has changed, when the session is read again, then the service holds what it decided', async () => {
    const { history } = await openTestHistory();
    const started = await history.start({ idempotencyId: 'owned-copies', startedAt: '2026-07-23T00:00:00.000Z', sessionType: 'conversation' });
    const id = started.value.id;
    const checkpointed = await history.checkpoint(id, { expectedVersion: 1, state: { sessionId: id, orchestration: { step: 1 } } });
    const command = (await history.enqueue(id, { idempotencyId: 'c1', kind: 'tool', payload: { args: ['a'] } })).value;
    const claimed = await history.claimCommand(command.id);
    const entry = await history.appendTranscript(id, { role: 'user-message', text: 'hello' });
    const before = await history.get(id);

    (started.value.state.orchestration as { status: string }).status = 'changed';
    (checkpointed.state.orchestration as { step: number }).step = 99;
    checkpointed.ingressFailures.push({
      attempt: 1,
      at: null,
      stage: null,
      code: null,
      message: 'x',
      roundsUsed: null,
      contextTokens: null,
      contextWindowTokens: null,
    });
    (command.payload as { args: string[] }).args.push('b');
    claimed.status = 'complete';
    entry.text = 'changed';
    (before.state.events as { text: string }[])[0]!.text = 'changed';
    (before.state.orchestration as { step: number }).step = 100;
    (await history.list())[0]!.state.orchestration = null;
    (await history.commandHeads())[0]!.kind = 'changed';

    const after = await history.get(id);
    expect(after.state.orchestration).toEqual({ step: 1 });
    expect(after.ingressFailures).toEqual([]);
    expect((after.state.events as { text: string }[])[0]?.text).toBe('hello');
    expect((await history.list())[0]?.state.orchestration).toEqual({ step: 1 });
    const [head] = await history.commandHeads();
    expect(head).toMatchObject({ id: command.id, kind: 'tool', status: 'processing', payload: { args: ['a'] } });
  });
});
