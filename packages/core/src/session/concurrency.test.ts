import { describe, expect, it } from 'vitest';
import { compactStream, foldStream } from '../kernel/fold.js';
import { ConcurrencyError, memoryStore, type EventStore } from '../kernel/index.js';
import { openSessionHistory } from './service.js';
import { sessionIdForStart, sessionStream } from './ids.js';
import { sessionReducer } from './reducer.js';
import { interleavingStore, openTestHistory, startConversation, streamNames, openArchiveHistory } from './test-support.fixture.js';

async function lastPosition(store: EventStore): Promise<number> {
  let position = 0;
  for await (const record of store.readAll()) position = record.position;
  return position;
}

const START = { startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' };

describe('SessionHistory across processes', () => {
  it('start is idempotent by idempotency id and derives the session id from it and its incarnation', async () => {
    const { history } = await openTestHistory();
    const first = await history.start({ idempotencyId: 'start-1', ...START });
    const again = await history.start({ idempotencyId: 'start-1', ...START, sessionType: 'ignored' });
    const other = await history.start({ idempotencyId: 'start-2', ...START });

    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.value.id).toBe(first.value.id);
    expect(again.value.state.sessionType).toBe('conversation');
    expect(first.value.id).toBe(sessionIdForStart('start-1', 1));
    expect(other.value.id).not.toBe(first.value.id);
  });

  it('two services racing to start the same key create one session', async () => {
    const store = memoryStore();
    const { history: a } = await openTestHistory({ store });
    const { history: b } = await openTestHistory({ store });

    const results = await Promise.all([a.start({ idempotencyId: 'race', ...START }), b.start({ idempotencyId: 'race', ...START })]);

    expect(results.map((result) => result.created).sort()).toEqual([false, true]);
    expect(results[0].value.id).toBe(results[1].value.id);
    // A start writes its session's stream only; the key's stream is written when a life of the key ends.
    expect(await streamNames(store, { startKeys: true })).toEqual([sessionStream(results[0].value.id)]);
  });

  it('a start that loses the append race returns the winner’s session', async () => {
    const inner = memoryStore();
    const { store, beforeNextAppend } = interleavingStore(inner);
    const { history: loser } = await openTestHistory({ store });
    const { history: winner } = await openTestHistory({ store: inner });
    let won: Awaited<ReturnType<typeof winner.start>> | undefined;
    beforeNextAppend(async () => {
      won = await winner.start({ idempotencyId: 'race', ...START, sessionType: 'winner' });
    });

    const lost = await loser.start({ idempotencyId: 'race', ...START, sessionType: 'loser' });

    expect(won?.created).toBe(true);
    expect(lost.created).toBe(false);
    expect(lost.value.id).toBe(won?.value.id);
    expect(lost.value.state.sessionType).toBe('winner');
  });

  it('a stale expected version is refused with the versions in the message and nothing is written', async () => {
    const { history, store } = await openTestHistory();
    const record = await startConversation(history, 'stale');
    await history.checkpoint(record.id, { expectedVersion: 1, state: { pendingTurn: true } });

    await expect(history.checkpoint(record.id, { expectedVersion: 1, state: { pendingTurn: false } })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Expected session version 1, found 2.',
    });
    await expect(history.startIngress(record.id, { expectedVersion: 7, provenanceId: 'p' })).rejects.toMatchObject({
      message: 'Expected session version 7, found 2.',
    });
    expect((await store.read(sessionStream(record.id))).revision).toBe(2);
  });

  it('when another process moves the version between read and append, the guarded call reports the moved version', async () => {
    const inner = memoryStore();
    const { store, beforeNextAppend } = interleavingStore(inner);
    const { history: slow } = await openTestHistory({ store });
    const { history: fast } = await openTestHistory({ store: inner });
    const record = await startConversation(fast, 'guarded');
    beforeNextAppend(() => fast.checkpoint(record.id, { expectedVersion: 1, state: { pendingTurn: true } }));

    await expect(slow.checkpoint(record.id, { expectedVersion: 1, state: { pendingTurn: false } })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Expected session version 1, found 2.',
    });
    expect((await fast.get(record.id)).state.pendingTurn).toBe(true);
  });

  it('when another process only appends to the transcript meanwhile, guarded and unguarded calls both go through', async () => {
    const inner = memoryStore();
    const { store, beforeNextAppend } = interleavingStore(inner);
    const { history: slow } = await openTestHistory({ store });
    const { history: fast } = await openTestHistory({ store: inner });
    const record = await startConversation(fast, 'unguarded');

    beforeNextAppend(() => fast.appendTranscript(record.id, { role: 'user-message', text: 'meanwhile' }));
    const command = await slow.enqueue(record.id, { idempotencyId: 'm', kind: 'message' });
    beforeNextAppend(() => fast.appendTranscript(record.id, { role: 'assistant-message', text: 'again' }));
    const checkpointed = await slow.checkpoint(record.id, { expectedVersion: 1, state: { pendingTurn: true } });

    expect(command.created).toBe(true);
    expect(checkpointed.version).toBe(2);
    expect(checkpointed.state.transcriptText).toBe('[user-message]\nmeanwhile\n\n[assistant-message]\nagain');
    expect((await inner.read(sessionStream(record.id))).revision).toBe(5);
  });

  it('two processes enqueueing the same key at once create one command', async () => {
    const inner = memoryStore();
    const { store, beforeNextAppend } = interleavingStore(inner);
    const { history: slow } = await openTestHistory({ store });
    const { history: fast } = await openTestHistory({ store: inner });
    const record = await startConversation(fast, 'enqueue-race');
    let first: Awaited<ReturnType<typeof fast.enqueue>> | undefined;
    beforeNextAppend(async () => {
      first = await fast.enqueue(record.id, { idempotencyId: 'same', kind: 'message' });
    });

    const second = await slow.enqueue(record.id, { idempotencyId: 'same', kind: 'message' });

    expect(first?.created).toBe(true);
    expect(second).toEqual({ value: first?.value, created: false });
    expect(await slow.commandHeads()).toHaveLength(1);
  });

  it('register creates a session once under the caller’s id (projecting the state onto the whitelist, as the archive policy does)', async () => {
    const { history } = await openArchiveHistory();
    const id = '9078bb6e-0931-4477-9ce9-b1430d0335a2';
    const registered = await history.register({ id: id.toUpperCase(), startedAt: '2026-07-24T00:00:00Z', state: { sessionType: 'conversation', boxes: {} } });
    expect(registered).toMatchObject({
      id,
      phase: 'active',
      version: 1,
      updatedAt: '2026-07-24T00:00:00Z',
      state: { sessionType: 'conversation', sessionId: id },
    });
    expect(registered.state.boxes).toBeUndefined();
    await expect(history.register({ id, startedAt: '2026-07-24T00:00:00Z', state: {} })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Session is already registered.',
    });
  });

  it('queries see sessions, commands, compactions and deletions made by another service', async () => {
    const store = memoryStore();
    const { history: reader } = await openArchiveHistory({ store });
    const { history: writer } = await openArchiveHistory({ store });
    expect(await reader.list()).toEqual([]);

    const kept = await startConversation(writer, 'kept');
    const done = await startConversation(writer, 'done');
    const command = (await writer.enqueue(kept.id, { idempotencyId: 'm', kind: 'message' })).value;
    expect((await reader.list()).map((record) => record.id).sort()).toEqual([kept.id, done.id].sort());
    expect(await reader.claimCommand(command.id)).toMatchObject({ status: 'processing' });

    await writer.checkpoint(kept.id, { expectedVersion: 1, state: { sessionType: 'conversation', pendingTurn: true } });
    await compactStream(store, sessionStream(kept.id), sessionReducer);
    await writer.complete(done.id, { expectedVersion: 1, state: { sessionObjectId: 'DONE' } });

    const listed = await reader.list();
    expect(listed.map((record) => [record.id, record.phase, record.version])).toEqual([
      ['DONE', 'complete', 1],
      [kept.id, 'active', 2],
    ]);
    expect(listed[1]?.state.pendingTurn).toBe(true);
    expect((await reader.commandHeads()).map((head) => [head.id, head.status])).toEqual([[command.id, 'processing']]);
    expect(await reader.list({ phase: 'active' })).toHaveLength(1);
  });

  it('a service opened on a compacted store answers as before the compaction', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store });
    const record = await startConversation(history, 'compacted');
    await history.appendTranscript(record.id, { role: 'user-message', text: 'hello' });
    const command = (await history.enqueue(record.id, { idempotencyId: 'm', kind: 'message' })).value;
    const before = { get: await history.get(record.id), list: await history.list(), heads: await history.commandHeads() };

    await compactStream(store, sessionStream(record.id), sessionReducer);
    const { history: reopened } = await openTestHistory({ store });

    expect(await reopened.get(record.id)).toEqual(before.get);
    expect(await reopened.list()).toEqual(before.list);
    expect(await reopened.commandHeads()).toEqual(before.heads);
    expect(await reopened.claimCommand(command.id)).toMatchObject({ status: 'processing' });
    expect((await foldStream(store, sessionStream(record.id), sessionReducer)).revision).toBe(4);
  });

  it('a gap in the change feed makes the projection read the stream itself', async () => {
    const inner = memoryStore();
    let hidden: number | undefined;
    const store = {
      ...inner,
      readAll: (options?: { fromPosition?: number }) =>
        (async function* () {
          for await (const record of inner.readAll(options)) if (record.position !== hidden) yield record;
        })(),
    };
    const { history: writer } = await openTestHistory({ store: inner });
    const { history: reader } = await openTestHistory({ store });
    const record = await startConversation(writer, 'gap');
    expect(await reader.list()).toHaveLength(1);
    const command = (await writer.enqueue(record.id, { idempotencyId: 'm', kind: 'message' })).value;
    // The reader never sees the enqueue in the feed: it learns of it only through the revision gap.
    hidden = await lastPosition(inner);
    await writer.checkpoint(record.id, { expectedVersion: 1, state: { pendingTurn: true } });

    expect((await reader.commandHeads()).map((head) => head.id)).toEqual([command.id]);
    expect((await reader.list())[0]).toMatchObject({ version: 2, state: { pendingTurn: true } });
  });

  it('retries after concurrent appends a bounded number of times, then reports a conflict', async () => {
    const inner = memoryStore();
    const { history: setup } = await openTestHistory({ store: inner });
    const record = await startConversation(setup, 'busy');
    let appends = 0;
    const store: EventStore = {
      ...inner,
      append: async (stream) => {
        appends++;
        throw new ConcurrencyError(stream, 1, 2);
      },
    };
    const { history } = await openTestHistory({ store });

    await expect(history.appendTranscript(record.id, { role: 'user-message', text: 'x' })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Session changed concurrently too many times; try again.',
    });
    expect(appends).toBeGreaterThan(1);
    expect(appends).toBeLessThanOrEqual(25);
  });

  it('refuses options that are not a store, a clock or a key list', async () => {
    await expect(openSessionHistory({} as never)).rejects.toMatchObject({ code: 'invalid_request', message: 'store: expected an EventStore' });
    await expect(openSessionHistory({ store: memoryStore(), controlStateKeys: ['a', 1] as never })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(openSessionHistory({ store: memoryStore(), clock: 'now' as never })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('list orders records by most recent update first', async () => {
    const { history } = await openTestHistory();
    const older = await startConversation(history, 'older');
    const newer = await startConversation(history, 'newer');
    await history.checkpoint(older.id, { expectedVersion: 1, state: {} });
    await history.recordCompletion({ sessionObjectId: 'OLD', commitReceipt: { sessionObjectId: 'OLD', committedAt: '2020-01-01T00:00:00Z' } });
    expect((await history.list()).map((record) => record.id)).toEqual([older.id, newer.id, 'OLD']);
  });

  it('health resolves on a working store and close stops the service', async () => {
    const { history } = await openTestHistory();
    await expect(history.health()).resolves.toBeUndefined();
    await history.close();
    await expect(history.list()).rejects.toMatchObject({ code: 'invalid_request', message: 'Session History is closed.' });
  });

  it('a store failure is an internal_error that keeps the cause out of the message', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store });
    await store.close();
    const failure = await history.list().catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'internal_error', message: 'An unexpected Session History storage error occurred.' });
    expect((failure as Error).cause).toMatchObject({ code: 'store_closed' });
  });
});
