import { describe, expect, it } from 'vitest';
import { foldStream, memoryStore } from '../kernel/index.js';
import { sessionIdForStart, sessionStream, startKeyStream } from './ids.js';
import { startKeyReducer } from './reducer.js';
import { openTestHistory } from './test-support.fixture.js';

const START = { startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' };
const REGISTERED = '9078bb6e-0931-4477-9ce9-b1430d0335a2';
const register = { id: REGISTERED, startedAt: '2026-07-24T00:00:00Z', state: { sessionType: 'conversation', startIdempotencyId: 'chat-7' } };

describe('SessionHistory: a start finds any live session whose latest state carries its key', () => {
  it('returns a registered session carrying the key, in this process and in another, and binds it to the key', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store });
    const { history: other } = await openTestHistory({ store });
    await history.register(register);

    const found = await history.start({ idempotencyId: 'chat-7', ...START });
    expect(found).toMatchObject({ created: false, value: { id: REGISTERED, phase: 'active', version: 1 } });
    expect(await other.start({ idempotencyId: 'chat-7', ...START })).toMatchObject({ created: false, value: { id: REGISTERED } });
    expect(await history.start({ idempotencyId: 'chat-7', ...START })).toMatchObject({ created: false, value: { id: REGISTERED } });
    // Bound as the key's first incarnation: that incarnation's own id is never made.
    const key = await foldStream(store, startKeyStream('chat-7'), startKeyReducer);
    expect(key.state.bindings).toEqual([{ incarnation: 1, sessionId: REGISTERED, released: false }]);
    expect((await store.read(sessionStream(sessionIdForStart('chat-7', 1)))).revision).toBe(0);
    expect((await history.list()).map((record) => record.id)).toEqual([REGISTERED]);
    await other.close();
    await history.close();
  });

  it('two services starting the key at once both get the registered session', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store });
    const { history: other } = await openTestHistory({ store });
    await other.register(register);
    const [mine, theirs] = await Promise.all([history.start({ idempotencyId: 'chat-7', ...START }), other.start({ idempotencyId: 'chat-7', ...START })]);
    expect([mine.value.id, theirs.value.id, mine.created, theirs.created]).toEqual([REGISTERED, REGISTERED, false, false]);
    await other.close();
    await history.close();
  });

  it('after the registered session completes, the next start makes a session of the key’s next incarnation', async () => {
    const { history, store } = await openTestHistory();
    await history.register(register);
    await history.start({ idempotencyId: 'chat-7', ...START });
    await history.complete(REGISTERED, { expectedVersion: 1, state: { sessionObjectId: 'O1' } });

    const next = await history.start({ idempotencyId: 'chat-7', ...START });
    expect(next.created).toBe(true);
    expect(next.value.id).toBe(sessionIdForStart('chat-7', 2));
    expect((await store.read(sessionStream(sessionIdForStart('chat-7', 1)))).revision).toBe(0);
    expect(await history.start({ idempotencyId: 'chat-7', ...START })).toMatchObject({ created: false, value: { id: next.value.id } });
    await history.close();
  });

  it('finds a session checkpointed to carry the key, and not one whose latest state no longer carries it', async () => {
    const { history } = await openTestHistory();
    const registered = await history.register(register);
    // Its latest state no longer carries the key: a start by the key makes a new session.
    await history.checkpoint(REGISTERED, { expectedVersion: registered.version, state: { sessionType: 'conversation' } });
    const fresh = await history.start({ idempotencyId: 'chat-7', ...START });
    expect(fresh.created).toBe(true);
    expect(fresh.value.id).not.toBe(REGISTERED);

    // A session started by one key and checkpointed to carry another is found by the other.
    const started = (await history.start({ idempotencyId: 'first-key', ...START })).value;
    await history.checkpoint(started.id, { expectedVersion: started.version, state: { ...started.state, startIdempotencyId: 'second-key' } });
    expect(await history.start({ idempotencyId: 'second-key', ...START })).toMatchObject({ created: false, value: { id: started.id } });
    expect(await history.start({ idempotencyId: 'first-key', ...START })).toMatchObject({ created: false, value: { id: started.id } });
    await history.close();
  });

  it('a service opened from a projection checkpoint finds the registered session too', async () => {
    const { history, store } = await openTestHistory();
    await history.register(register);
    await history.close();
    const { history: reopened } = await openTestHistory({ store });
    expect(await reopened.start({ idempotencyId: 'chat-7', ...START })).toMatchObject({ created: false, value: { id: REGISTERED } });
    await reopened.close();
  });
});
