import { describe, expect, it } from 'vitest';
import { foldStream, memoryStore, type EventStore } from '../kernel/index.js';
import { legacySessionIdForStart, sessionIdForStart, sessionStream, startKeyStream } from './ids.js';
import { feedLength, interleavingStore, startConversation, streamNames, ARCHIVE_POLICIES, openArchiveHistory } from './test-support.fixture.js';
import { startKeyReducer } from './reducer.js';
import { openSessionHistory, type SessionHistory } from './service.js';

const START = { startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' };

/** Starts `key`, completes it as `objectId`, starts `key` again; returns both lives' ids. */
async function twoLives(history: SessionHistory, key: string, objectId: string) {
  const first = await startConversation(history, key);
  const command = (await history.enqueue(first.id, { idempotencyId: 'm', kind: 'message' })).value;
  await history.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: objectId } });
  const second = await history.start({ idempotencyId: key, ...START });
  await history.appendTranscript(second.value.id, { role: 'user-message', text: 'second life' });
  const secondCommand = (await history.enqueue(second.value.id, { idempotencyId: 'm', kind: 'message' })).value;
  return { first, command, second, secondCommand };
}

describe('SessionHistory: a start key’s successive sessions', () => {
  it('a start after the key’s session completed creates a new session with a new id and new command ids', async () => {
    const { history } = await openArchiveHistory();
    const { first, command, second, secondCommand } = await twoLives(history, 'chat-42', 'O1');

    expect(second.created).toBe(true);
    expect(second.value.id).not.toBe(first.id);
    expect(secondCommand.id).not.toBe(command.id);
    await expect(history.get(first.id)).rejects.toMatchObject({ code: 'not_found' });
    expect(await history.start({ idempotencyId: 'chat-42', ...START })).toMatchObject({ created: false, value: { id: second.value.id } });
  });

  it('never derives an id of release 0.1.0 (the key alone) for a new session', async () => {
    const { history } = await openArchiveHistory();
    const started = await history.start({ idempotencyId: 'fresh', ...START });
    expect(started.value.id).not.toBe(legacySessionIdForStart('fresh'));
  });

  it('a retried recordCompletion naming the first life changes nothing in the second', async () => {
    const { history, store } = await openArchiveHistory();
    const { first, second } = await twoLives(history, 'chat-42', 'O1');
    const before = { record: await history.get(second.value.id), feed: await feedLength(store) };

    await history.recordCompletion({ sessionObjectId: 'O1', sessionId: first.id });

    expect(await history.get(second.value.id)).toEqual(before.record);
    expect(await feedLength(store)).toBe(before.feed);
  });

  it('a retried complete of the first life is not_found and changes nothing in the second', async () => {
    const { history, store } = await openArchiveHistory();
    const { first, second } = await twoLives(history, 'chat-42', 'O1');
    const before = { record: await history.get(second.value.id), feed: await feedLength(store) };

    await expect(history.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: 'O2' } })).rejects.toMatchObject({ code: 'not_found' });

    expect(await history.get(second.value.id)).toEqual(before.record);
    expect(await feedLength(store)).toBe(before.feed);
  });

  it('claiming a command of the first life is not_found and leaves the second life’s command pending', async () => {
    const { history, store } = await openArchiveHistory();
    const { command, secondCommand } = await twoLives(history, 'chat-42', 'O1');
    const before = await feedLength(store);

    await expect(history.claimCommand(command.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(history.completeCommand(command.id)).rejects.toMatchObject({ code: 'not_found' });

    expect(await history.commandHeads()).toEqual([secondCommand]);
    expect(await feedLength(store)).toBe(before);
  });

  it('services racing to start a key again after completion agree on one new session', async () => {
    const store = memoryStore();
    const { history: a } = await openArchiveHistory({ store });
    const { history: b } = await openArchiveHistory({ store });
    const first = await startConversation(a, 'again');
    await a.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: 'A1' } });

    const results = await Promise.all([a, b, a, b].map((history) => history.start({ idempotencyId: 'again', ...START })));

    expect(new Set(results.map((result) => result.value.id)).size).toBe(1);
    expect(results[0]?.value.id).not.toBe(first.id);
    expect(results.filter((result) => result.created)).toHaveLength(1);
  });

  it('a start that loses the race for the key returns the winner’s session', async () => {
    const inner = memoryStore();
    const { store, beforeNextAppend } = interleavingStore(inner);
    const { history: loser } = await openArchiveHistory({ store });
    const { history: winner } = await openArchiveHistory({ store: inner });
    const first = await startConversation(winner, 'race');
    await winner.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: 'R1' } });
    let won: Awaited<ReturnType<typeof winner.start>> | undefined;
    beforeNextAppend(async () => {
      won = await winner.start({ idempotencyId: 'race', ...START, sessionType: 'winner' });
    });

    const lost = await loser.start({ idempotencyId: 'race', ...START, sessionType: 'loser' });

    expect(won?.created).toBe(true);
    expect(lost).toMatchObject({ created: false, value: { id: won?.value.id, state: { sessionType: 'winner' } } });
  });

  it('a start that read the key before its session completed never writes that session again, even for a moment: it starts the next', async () => {
    const inner = memoryStore();
    const { store: interleaved, beforeNextAppend } = interleavingStore(inner);
    // Right after the slow start's first append, whatever it did: is the first life back?
    let afterAppend: (() => Promise<void>) | undefined;
    const seen: string[] = [];
    const store: EventStore = {
      ...interleaved,
      append: async (stream, events, options) => {
        try {
          return await interleaved.append(stream, events, options);
        } finally {
          const check = afterAppend;
          afterAppend = undefined;
          await check?.();
        }
      },
    };
    const { history: fast } = await openArchiveHistory({ store: inner });
    const { history: slow } = await openArchiveHistory({ store });
    const { history: other } = await openArchiveHistory({ store: inner });
    const first = await startConversation(fast, 'late');
    beforeNextAppend(async () => {
      // The slow start has read the key (its first incarnation lives); before its append, that life ends.
      await fast.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: 'L1' } });
    });
    afterAppend = async () => {
      seen.push(
        await other.get(first.id).then(
          (record) => `${record.phase} v${record.version}`,
          (error: { code?: string }) => String(error.code),
        ),
      );
      seen.push(
        await other.appendTranscript(first.id, { role: 'user-message', text: 'late' }).then(
          () => 'appended',
          (error: { code?: string }) => String(error.code),
        ),
      );
    };

    const started = await slow.start({ idempotencyId: 'late', ...START });

    expect(seen, 'the first life stays ended while the slow start runs').toEqual(['not_found', 'not_found']);

    expect(started).toMatchObject({ created: true });
    expect(started.value.id).not.toBe(first.id);
    const records = [];
    for await (const record of inner.readAll()) if (record.streamId === sessionStream(first.id)) records.push(record.type);
    expect(records, 'nothing of the first life after its deletion').toEqual(['$deleted']);
    await expect(other.appendTranscript(first.id, { role: 'user-message', text: 'late' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(other.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: 'L2' } })).rejects.toMatchObject({ code: 'not_found' });
    expect(await other.start({ idempotencyId: 'late', ...START })).toMatchObject({ created: false, value: { id: started.value.id } });
  });

  it('a start overtaken by a whole life of its incarnation cannot bring that session back: it starts the next', async () => {
    const inner = memoryStore();
    const { store, beforeNextAppend } = interleavingStore(inner);
    const { history: slow } = await openArchiveHistory({ store });
    const { history: fast } = await openArchiveHistory({ store: inner });
    let overtaking: string | undefined;
    beforeNextAppend(async () => {
      // Between the slow start's read of the key and its append, the first session lives and completes.
      overtaking = (await startConversation(fast, 'overtaken')).id;
      await fast.complete(overtaking, { expectedVersion: 1, state: { sessionObjectId: 'OV1' } });
    });

    const started = await slow.start({ idempotencyId: 'overtaken', ...START });

    expect(started.created).toBe(true);
    expect(started.value.id).not.toBe(overtaking);
    await expect(slow.get(overtaking as string)).rejects.toMatchObject({ code: 'not_found' });
    expect(await streamNames(inner)).toEqual(['catalog', sessionStream(started.value.id)]);
    expect(await fast.start({ idempotencyId: 'overtaken', ...START })).toMatchObject({ created: false, value: { id: started.value.id } });
  });

  it('a session a start created but never bound (a crash between the two) is bound by the next start, or released by its completion', async () => {
    const store = memoryStore();
    const unbound = async (key: string): Promise<string> => {
      const id = sessionIdForStart(key, 1);
      const state = { sessionId: id, sessionType: 'conversation', startIdempotencyId: key };
      await store.append(sessionStream(id), [{ type: 'SessionStarted', data: { at: '2026-07-01T00:00:00.000Z', startedAt: '2026-07-01T00:00:00Z', state } }], {
        expectedRevision: 'no_stream',
      });
      return id;
    };
    const resumed = await unbound('resumed');
    const completed = await unbound('completed');
    const { history } = await openArchiveHistory({ store });

    expect(await history.start({ idempotencyId: 'resumed', ...START })).toMatchObject({ created: false, value: { id: resumed } });
    await history.checkpoint(completed, { expectedVersion: 1, state: { sessionType: 'conversation' } });
    await history.complete(completed, { expectedVersion: 2, state: { sessionObjectId: 'C1' } });
    const next = await history.start({ idempotencyId: 'completed', ...START });
    expect(next.created).toBe(true);
    expect(next.value.id).toBe(sessionIdForStart('completed', 2));
  });

  it('a start writes only its session; the key stream, written when a life ends, is neither listed nor found as a session', async () => {
    const { history, store } = await openArchiveHistory();
    const ended = await startConversation(history, 'listed');
    expect(await streamNames(store, { startKeys: true })).toEqual([sessionStream(ended.id)]);
    await history.complete(ended.id, { expectedVersion: 1, state: { sessionObjectId: 'LISTED1' } });
    const live = (await history.start({ idempotencyId: 'listed', ...START })).value;
    expect(await streamNames(store, { startKeys: true })).toEqual(['catalog', sessionStream(live.id), startKeyStream('listed')].sort());
    expect((await history.list()).map((record) => record.id).sort()).toEqual([live.id, 'LISTED1'].sort());
    expect(await history.commandHeads()).toEqual([]);
  });

  it('a start that finds its key’s session complete but not finished releases it and starts the next incarnation', async () => {
    const inner = memoryStore();
    let failCatalog = true;
    const store = {
      ...inner,
      append: async (...args: Parameters<typeof inner.append>) => {
        if (failCatalog && args[0] === 'catalog') throw new Error('disk unplugged');
        return inner.append(...args);
      },
    };
    const { history } = await openArchiveHistory({ store });
    const first = await startConversation(history, 'unfinished');
    await expect(history.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: 'U1' } })).rejects.toMatchObject({ code: 'internal_error' });

    const next = await history.start({ idempotencyId: 'unfinished', ...START });

    expect(next).toMatchObject({ created: true, value: { id: sessionIdForStart('unfinished', 2) } });
    expect((await foldStream(inner, startKeyStream('unfinished'), startKeyReducer)).state.bindings).toEqual([
      { incarnation: 1, sessionId: first.id, released: true },
    ]);
    // The rest of the first life's completion is done when the service next opens.
    failCatalog = false;
    const reopened = await openSessionHistory({ ...ARCHIVE_POLICIES, store });
    expect(await streamNames(inner)).toEqual(['catalog', sessionStream(next.value.id)].sort());
    expect((await reopened.list()).map((record) => record.id).sort()).toEqual([next.value.id, 'U1'].sort());
    expect(await reopened.start({ idempotencyId: 'unfinished', ...START })).toMatchObject({ created: false, value: { id: next.value.id } });
  });

  it('a start bound by an earlier release is followed while it lives, and released by the next start once it completed', async () => {
    const store = memoryStore();
    const { history } = await openArchiveHistory({ store });
    const first = await startConversation(history, 'bound');
    // As a start of the earlier release left it: the session bound to its key at once.
    await store.append(
      startKeyStream('bound'),
      [{ type: 'StartKeyBound', data: { at: '2026-07-23T00:00:00.000Z', idempotencyId: 'bound', incarnation: 1, sessionId: first.id } }],
      { expectedRevision: 'no_stream' },
    );
    expect(await history.start({ idempotencyId: 'bound', ...START })).toMatchObject({ created: false, value: { id: first.id } });
    await history.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: 'B1' } });
    const bindings = (await foldStream(store, startKeyStream('bound'), startKeyReducer)).state.bindings;
    expect(bindings).toEqual([{ incarnation: 1, sessionId: first.id, released: true }]);
    expect(await history.start({ idempotencyId: 'bound', ...START })).toMatchObject({ created: true, value: { id: sessionIdForStart('bound', 2) } });
  });

  it('a start with the key of a live session of release 0.1.0 (id derived from the key alone) returns it', async () => {
    const store = memoryStore();
    const legacyId = legacySessionIdForStart('legacy');
    await store.append(
      sessionStream(legacyId),
      [
        {
          type: 'SessionStarted',
          data: {
            at: '2026-07-01T00:00:00.000Z',
            startedAt: '2026-07-01T00:00:00Z',
            state: { sessionId: legacyId, sessionType: 'conversation', startIdempotencyId: 'legacy' },
          },
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    const { history } = await openArchiveHistory({ store });

    expect(await history.start({ idempotencyId: 'legacy', ...START })).toMatchObject({ created: false, value: { id: legacyId } });
    await history.complete(legacyId, { expectedVersion: 1, state: { sessionObjectId: 'L1' } });
    const next = await history.start({ idempotencyId: 'legacy', ...START });
    expect(next.created).toBe(true);
    expect(next.value.id).not.toBe(legacyId);
  });

  it('a session registered under its own id is found by that id and never bound to a start key', async () => {
    const { history } = await openArchiveHistory();
    const id = '9078bb6e-0931-4477-9ce9-b1430d0335a2';
    await history.register({ id, startedAt: '2026-07-24T00:00:00Z', state: { sessionType: 'conversation', startIdempotencyId: 'other' } });
    const started = await history.start({ idempotencyId: 'registered', ...START });
    expect(started.value.id).not.toBe(id);
    expect((await history.list()).map((record) => record.id).sort()).toEqual([id, started.value.id].sort());
  });
});
