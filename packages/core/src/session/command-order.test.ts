import { describe, expect, it } from 'vitest';
import { compactStream, copyStore } from '../kernel/fold.js';
import { memoryStore } from '../kernel/index.js';
import { sessionStream } from './ids.js';
import { sessionReducer } from './reducer.js';
import { openTestHistory, startConversation } from './test-support.fixture.js';
import type { SessionHistory } from './service.js';

/** A clock that never moves: every enqueue falls in the same millisecond. */
const frozen = () => new Date('2026-07-23T00:00:00.000Z');

/** Six sessions, each enqueued once, in an order that differs from the order of their ids. */
async function enqueueAcross(history: SessionHistory): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < 6; index++) ids.push((await startConversation(history, `order-${index}`)).id);
  const byIdDescending = [...ids].sort().reverse();
  const enqueued: string[] = [];
  for (const id of [...byIdDescending.slice(3), ...byIdDescending.slice(0, 3)]) {
    enqueued.push((await history.enqueue(id, { idempotencyId: 'm', kind: 'message' })).value.id);
  }
  return enqueued;
}

describe('SessionHistory: the order of command heads', () => {
  it('heads enqueued within one millisecond come back in enqueue order', async () => {
    const { history } = await openTestHistory({ clock: frozen });
    const enqueued = await enqueueAcross(history);
    expect((await history.commandHeads()).map((head) => head.id)).toEqual(enqueued);
  });

  it('takes one number per created command: decisions made again, refused or no-ops take none, with or without checkpoints', async () => {
    for (const checkpoints of [undefined, false] as const) {
      const store = memoryStore();
      const first = await openTestHistory({ store, ...(checkpoints === false ? { checkpoints } : {}) });
      const { id } = await startConversation(first.history, 'numbered');
      await first.history.close();
      // After a reopen the session is not cached: the enqueue is decided on an empty state first (refused), then
      // on the stream as read; an enqueue repeated is a no-op decided twice too.
      const { history } = await openTestHistory({ store, ...(checkpoints === false ? { checkpoints } : {}) });
      const orders: number[] = [];
      for (const key of ['a', 'a', 'b']) orders.push((await history.enqueue(id, { idempotencyId: key, kind: 'message' })).value.enqueueOrder);
      await history.close();
      const reopened = (await openTestHistory({ store, ...(checkpoints === false ? { checkpoints } : {}) })).history;
      orders.push((await reopened.enqueue(id, { idempotencyId: 'c', kind: 'message' })).value.enqueueOrder);
      expect(orders, `checkpoints ${String(checkpoints)}`).toEqual([1, 1, 2, 3]);
      await reopened.close();
    }
  });

  it('numbers enqueues after a reopen above those of a session deleted before the projection saw them', async () => {
    const store = memoryStore();
    // Without the background follow the projection sees the feed only when a query or close catches it up, by
    // which time the completed session's stream, and its commands with it, are gone from the feed.
    const { history } = await openTestHistory({ store, follow: false });
    const first = await startConversation(history, 'deleted');
    const orders: number[] = [];
    for (const key of ['a', 'b', 'c']) orders.push((await history.enqueue(first.id, { idempotencyId: key, kind: 'message' })).value.enqueueOrder);
    await history.complete(first.id, { expectedVersion: 1, state: { sessionObjectId: 'DELETED1' } });
    await history.close();

    const { history: reopened } = await openTestHistory({ store, follow: false });
    const next = await startConversation(reopened, 'after');
    const command = (await reopened.enqueue(next.id, { idempotencyId: 'a', kind: 'message' })).value;
    expect(command.enqueueOrder).toBeGreaterThan(Math.max(...orders));
  });

  it('keeps enqueue order after compaction, reopening and copying the store', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store, clock: frozen });
    const enqueued = await enqueueAcross(history);
    for await (const { stream } of store.streams({ prefix: 'session-' })) await compactStream(store, stream, sessionReducer);

    const { history: reopened } = await openTestHistory({ store, clock: frozen });
    expect((await reopened.commandHeads()).map((head) => head.id)).toEqual(enqueued);

    const copy = memoryStore();
    await copyStore(store, copy);
    const { history: onCopy } = await openTestHistory({ store: copy, clock: frozen });
    expect((await onCopy.commandHeads()).map((head) => head.id)).toEqual(enqueued);
  });

  it('a reopened service continues the order after the highest it finds', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store, clock: frozen });
    const enqueued = await enqueueAcross(history);
    const { history: reopened } = await openTestHistory({ store, clock: frozen });
    const late = await startConversation(reopened, 'late');
    // The new session's id may sort anywhere; enqueued last, its command is last.
    enqueued.push((await reopened.enqueue(late.id, { idempotencyId: 'm', kind: 'message' })).value.id);
    expect((await reopened.commandHeads()).map((head) => head.id)).toEqual(enqueued);
  });

  it('reads commands recorded before the order was (release 0.1.0) and puts them first among equal times', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store, clock: frozen });
    const old = await startConversation(history, 'old');
    const oldCommand = {
      id: '00000000-0000-5000-8000-000000000001',
      sessionId: old.id,
      sequence: 1,
      kind: 'message',
      payload: null,
      status: 'pending',
      cancelRequested: false,
      outcome: null,
      createdAt: '2026-07-23T00:00:00.000Z',
      processingStartedAt: null,
      completedAt: null,
      idempotencyId: 'm',
    };
    await store.append(sessionStream(old.id), [{ type: 'CommandEnqueued', data: { command: oldCommand } }], { expectedRevision: 'any' });
    const { history: reopened } = await openTestHistory({ store, clock: frozen });
    const enqueued = await enqueueAcross(reopened);
    expect((await reopened.commandHeads()).map((head) => head.id)).toEqual([oldCommand.id, ...enqueued]);
  });
});
