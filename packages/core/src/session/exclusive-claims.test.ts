import { describe, expect, it } from 'vitest';
import { memoryStore } from '../kernel/index.js';
import { decideClaimCommand, decideCompleteCommand, decideEnqueue, decideStart, type Decision } from './decisions.js';
import { SessionHistoryError } from './errors.js';
import { sessionIdForStart } from './ids.js';
import type { SessionStreamState } from './model.js';
import { applySessionEvent, initialSessionState } from './reducer.js';
import { openSessionHistory } from './service.js';
import { startConversation } from './test-support.fixture.js';

const SESSION = sessionIdForStart('exclusive-claims', 1);
const T0 = new Date('2026-07-23T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

function given(...decisions: ((state: SessionStreamState) => Decision)[]): SessionStreamState {
  let state = initialSessionState(SESSION);
  for (const decide of decisions) {
    const events = decide(state);
    if (events instanceof SessionHistoryError) throw events;
    state = events.reduce((current, event) => applySessionEvent(current, event), state);
  }
  return state;
}

const started = (state: SessionStreamState) =>
  decideStart(state, { idempotencyId: 'exclusive-claims', startedAt: '2026-07-23T00:00:00Z', sessionType: 'x' }, T0);
const enqueued = (state: SessionStreamState) => decideEnqueue(state, { idempotencyId: 'job-1', kind: 'job', payload: {} }, T0);
const commandId = (state: SessionStreamState) => state.commands[0]?.id ?? '';
const claimedBy =
  (worker: string, now: Date, leaseMs = 500) =>
  (state: SessionStreamState) =>
    decideClaimCommand(state, commandId(state), now, { worker, leaseMs });

describe('exclusive claims: decisions (pure, no store)', () => {
  it('a claim with a worker records the worker and the lease end computed from the decision time', () => {
    const state = given(started, enqueued);
    expect(decideClaimCommand(state, commandId(state), T0, { worker: 'w1', leaseMs: 500 })).toEqual([
      { type: 'CommandClaimed', data: { at: T0.toISOString(), commandId: commandId(state), worker: 'w1', leaseUntil: '2026-07-23T12:00:00.500Z' } },
    ]);
    const claimed = given(started, enqueued, claimedBy('w1', T0));
    expect(claimed.commands[0]).toMatchObject({
      status: 'processing',
      worker: 'w1',
      leaseUntil: '2026-07-23T12:00:00.500Z',
      processingStartedAt: T0.toISOString(),
    });
  });

  it('another worker is refused while the lease runs, up to its last millisecond', () => {
    const state = given(started, enqueued, claimedBy('w1', T0));
    for (const now of [at(1), at(499)]) {
      const refused = decideClaimCommand(state, commandId(state), now, { worker: 'w2', leaseMs: 500 });
      expect(refused).toMatchObject({ code: 'state_conflict', message: 'Command is claimed by another worker.' });
    }
  });

  it('the same worker claims again: the lease is renewed and the run keeps its start time', () => {
    const state = given(started, enqueued, claimedBy('w1', T0), claimedBy('w1', at(400)));
    expect(state.commands[0]).toMatchObject({ worker: 'w1', leaseUntil: '2026-07-23T12:00:00.900Z', processingStartedAt: T0.toISOString() });
  });

  it('another worker takes the command over once the lease has run out, and the run starts again', () => {
    const state = given(started, enqueued, claimedBy('w1', T0), claimedBy('w2', at(500), 1000));
    expect(state.commands[0]).toMatchObject({
      status: 'processing',
      worker: 'w2',
      leaseUntil: '2026-07-23T12:00:01.500Z',
      processingStartedAt: at(500).toISOString(),
    });
  });

  it('a worker may take a command claimed without a worker, which holds no lease', () => {
    const state = given(started, enqueued, (s) => decideClaimCommand(s, commandId(s), T0), claimedBy('w1', at(1)));
    expect(state.commands[0]).toMatchObject({ worker: 'w1', leaseUntil: '2026-07-23T12:00:00.501Z' });
  });

  it('without a worker nothing changes: a second claim of a processing command records nothing, even one held by a worker', () => {
    const plain = given(started, enqueued, (s) => decideClaimCommand(s, commandId(s), T0));
    expect(plain.commands[0]).not.toHaveProperty('worker');
    expect(decideClaimCommand(plain, commandId(plain), at(1))).toEqual([]);
    const held = given(started, enqueued, claimedBy('w1', T0));
    expect(decideClaimCommand(held, commandId(held), at(1))).toEqual([]);
  });

  it('a complete command is refused to every worker, its own included', () => {
    const state = given(started, enqueued, claimedBy('w1', T0), (s) => decideCompleteCommand(s, commandId(s), { ok: true }, at(1), 'w1'));
    for (const worker of ['w1', 'w2']) {
      expect(decideClaimCommand(state, commandId(state), at(10_000), { worker, leaseMs: 500 })).toMatchObject({
        code: 'state_conflict',
        message: 'Command is already complete.',
      });
    }
  });

  it('a worker that lost the command to a takeover cannot complete it; the holder can, once', () => {
    const state = given(started, enqueued, claimedBy('w1', T0), claimedBy('w2', at(600)));
    expect(decideCompleteCommand(state, commandId(state), {}, at(700), 'w1')).toMatchObject({
      code: 'state_conflict',
      message: 'Command is claimed by another worker.',
    });
    const done = given(started, enqueued, claimedBy('w1', T0), claimedBy('w2', at(600)), (s) =>
      decideCompleteCommand(s, commandId(s), { by: 'w2' }, at(700), 'w2'),
    );
    expect(done.commands[0]).toMatchObject({ status: 'complete', outcome: { by: 'w2' }, worker: 'w2' });
    expect(decideCompleteCommand(done, commandId(done), {}, at(800), 'w2')).toEqual([]);
    expect(decideCompleteCommand(done, commandId(done), {}, at(800), 'w1')).toMatchObject({ code: 'state_conflict' });
  });

  it('a claim recorded before workers existed replays as today: no worker, no lease', () => {
    const state = given(started, enqueued, (s) => [{ type: 'CommandClaimed', data: { at: T0.toISOString(), commandId: commandId(s) } }]);
    expect(state.commands[0]).toMatchObject({ status: 'processing', processingStartedAt: T0.toISOString() });
    expect(state.commands[0]).not.toHaveProperty('worker');
    expect(state.commands[0]).not.toHaveProperty('leaseUntil');
  });
});

describe('exclusive claims: the service, with an injected clock', () => {
  async function openWithClock() {
    let now = T0.getTime();
    const store = memoryStore({ clock: () => new Date(now) });
    const history = await openSessionHistory({ store, clock: () => new Date(now) });
    const { id } = await startConversation(history, 'workers');
    const command = (await history.enqueue(id, { idempotencyId: 'job-1', kind: 'job' })).value;
    return { history, command, advance: (ms: number) => void (now += ms) };
  }

  it('refuses another worker during the lease, renews for the holder, hands over after it and records one outcome', async () => {
    const { history, command, advance } = await openWithClock();
    expect(await history.claimCommand(command.id, { worker: 'w1', leaseMs: 500 })).toMatchObject({ worker: 'w1', leaseUntil: '2026-07-23T12:00:00.500Z' });
    advance(300);
    await expect(history.claimCommand(command.id, { worker: 'w2', leaseMs: 500 })).rejects.toMatchObject({ code: 'state_conflict' });
    expect(await history.claimCommand(command.id, { worker: 'w1', leaseMs: 500 })).toMatchObject({ worker: 'w1', leaseUntil: '2026-07-23T12:00:00.800Z' });
    advance(500);
    expect(await history.claimCommand(command.id, { worker: 'w2', leaseMs: 500 })).toMatchObject({ worker: 'w2', leaseUntil: '2026-07-23T12:00:01.300Z' });
    await expect(history.completeCommand(command.id, { outcome: 'late', worker: 'w1' })).rejects.toMatchObject({ code: 'state_conflict' });
    expect(await history.completeCommand(command.id, { outcome: 'done', worker: 'w2' })).toMatchObject({ status: 'complete', outcome: 'done', worker: 'w2' });
    expect(await history.commandHeads()).toEqual([]);
  });

  it('a second service on the same store sees the holder in its heads and is refused until the lease ends', async () => {
    let now = T0.getTime();
    const store = memoryStore({ clock: () => new Date(now) });
    const first = await openSessionHistory({ store, clock: () => new Date(now) });
    const { id } = await startConversation(first, 'two-services');
    const command = (await first.enqueue(id, { idempotencyId: 'job-1', kind: 'job' })).value;
    const second = await openSessionHistory({ store, clock: () => new Date(now) });
    await first.claimCommand(command.id, { worker: 'w1', leaseMs: 500 });
    expect(await second.commandHeads()).toEqual([expect.objectContaining({ id: command.id, worker: 'w1', leaseUntil: '2026-07-23T12:00:00.500Z' })]);
    await expect(second.claimCommand(command.id, { worker: 'w2', leaseMs: 500 })).rejects.toMatchObject({ code: 'state_conflict' });
    now += 500;
    expect(await second.claimCommand(command.id, { worker: 'w2', leaseMs: 500 })).toMatchObject({ worker: 'w2' });
    await expect(first.completeCommand(command.id, { worker: 'w1' })).rejects.toMatchObject({ code: 'state_conflict' });
  });

  it('refuses a malformed claim with invalid_request and changes nothing', async () => {
    const { history, command } = await openWithClock();
    for (const claim of [{ worker: '', leaseMs: 500 }, { worker: 'w1', leaseMs: 0 }, { worker: 'w1', leaseMs: 1.5 }, { worker: 'w1' }]) {
      await expect(history.claimCommand(command.id, claim as never)).rejects.toMatchObject({ code: 'invalid_request' });
    }
    expect((await history.commandHeads())[0]).toMatchObject({ status: 'pending' });
  });
});
