import { describe, expect, it } from 'vitest';
import { memoryStore, type EventStore, type RecordedEvent } from '../kernel/index.js';
import { type openTestHistory, startConversation, openArchiveHistory } from './test-support.fixture.js';

/** Wraps `inner` and counts the feed records its `readAll` hands out. */
function countingFeed(inner: EventStore): { store: EventStore; recordsRead: () => number } {
  let records = 0;
  const store: EventStore = {
    ...inner,
    readAll: (options) => ({
      async *[Symbol.asyncIterator](): AsyncGenerator<RecordedEvent> {
        for await (const record of inner.readAll(options)) {
          records++;
          yield record;
        }
      },
    }),
  };
  return { store, recordsRead: () => records };
}

/** Starts a session and takes one command of it through enqueue, claim and complete. */
async function workOn(history: Awaited<ReturnType<typeof openTestHistory>>['history'], key: string): Promise<void> {
  const session = await startConversation(history, key);
  const { value: command } = await history.enqueue(session.id, { idempotencyId: `${key}-command`, kind: 'ingest', payload: { key } });
  await history.claimCommand(command.id);
  await history.completeCommand(command.id, { outcome: { ok: true } });
  await history.enqueue(session.id, { idempotencyId: `${key}-next`, kind: 'ingest', payload: { key } });
  await history.checkpoint(session.id, { expectedVersion: (await history.get(session.id)).version, state: { step: 1 } });
}

describe("the projection takes the service's own appends from the feed", () => {
  it('so its queries answer as those of a service that read them all', async () => {
    const store = memoryStore();
    const { history } = await openArchiveHistory({ store, follow: false, compaction: false });
    for (const key of ['a', 'b', 'c']) await workOn(history, key);
    const listed = await history.list();
    const heads = await history.commandHeads();
    expect(heads.map((head) => head.idempotencyId).sort()).toEqual(['a-next', 'b-next', 'c-next']);

    const { history: fresh } = await openArchiveHistory({ store, follow: false, compaction: false });
    expect(await fresh.list()).toEqual(listed);
    expect(await fresh.commandHeads()).toEqual(heads);
    await Promise.all([history.close(), fresh.close()]);
  });

  it('also when appends to two streams answer in the opposite order to their commits', async () => {
    const store = memoryStore();
    let holdFirst: Promise<void> | undefined;
    let releaseFirst: () => void = () => undefined;
    // The first append of the race reaches the store first but answers only after the second one has.
    const racing: EventStore = {
      ...store,
      append: async (stream, events, options) => {
        const result = await store.append(stream, events, options);
        if (holdFirst === undefined && stream.endsWith('race-a')) {
          holdFirst = new Promise<void>((resolve) => (releaseFirst = resolve));
          await holdFirst;
        }
        return result;
      },
    };
    const { history } = await openArchiveHistory({ store: racing, follow: false, compaction: false });
    const before = await history.list();
    const first = startConversation(history, 'race-a');
    await new Promise((resolve) => setTimeout(resolve, 10));
    await startConversation(history, 'race-b');
    releaseFirst();
    await first;
    const listed = await history.list();
    expect(listed.length).toBe(before.length + 2);

    const { history: fresh } = await openArchiveHistory({ store, follow: false, compaction: false });
    expect(await fresh.list()).toEqual(listed);
    await Promise.all([history.close(), fresh.close()]);
  });

  it('and reads the feed for what another service wrote in between, and after a completion (an event id, a deletion)', async () => {
    const { store, recordsRead } = countingFeed(memoryStore());
    const { history } = await openArchiveHistory({ store, follow: false, compaction: false });
    const { history: other } = await openArchiveHistory({ store, follow: false, compaction: false });
    await workOn(history, 'mine');
    await workOn(other, 'theirs');
    const afterOther = recordsRead();
    // These appends follow the other service's: the projection may not take them before reading those.
    await workOn(history, 'mine-again');
    expect((await history.list()).length).toBe(3);
    expect(recordsRead()).toBeGreaterThan(afterOther);

    // A completion records its receipt under an event id and deletes the stream: both come from the feed.
    const done = await startConversation(history, 'done');
    const afterStart = recordsRead();
    await history.complete(done.id, { expectedVersion: done.version, state: { sessionObjectId: 'OBJ-1' } });
    await workOn(history, 'after');
    const listed = await history.list();
    expect(recordsRead()).toBeGreaterThan(afterStart);
    expect(listed.filter((record) => record.phase === 'complete').length).toBe(1);
    expect(listed.length).toBe(5);

    const { history: fresh } = await openArchiveHistory({ store, follow: false, compaction: false });
    expect(await fresh.list()).toEqual(listed);
    expect(await fresh.commandHeads()).toEqual(await history.commandHeads());
    await Promise.all([history.close(), other.close(), fresh.close()]);
  });
});

describe('what the service keeps of a caller’s values', () => {
  it('is what a store gives back: -0 reads as 0 before and after a reopen, and the caller’s later changes touch nothing', async () => {
    const store = memoryStore();
    const { history } = await openArchiveHistory({ store, follow: false, compaction: false });
    const session = await startConversation(history, 'values');
    const payload = { zero: -0, nested: [-0, { deep: -0 }] };
    await history.enqueue(session.id, { idempotencyId: 'values-command', kind: 'ingest', payload });
    await history.checkpoint(session.id, { expectedVersion: (await history.get(session.id)).version, state: { pendingTurn: -0 } });
    payload.nested.push(1);

    const live = { record: await history.get(session.id), heads: await history.commandHeads(), list: await history.list() };
    // toEqual tells -0 from 0.
    expect(live.heads.map((head) => head.payload)).toEqual([{ zero: 0, nested: [0, { deep: 0 }] }]);
    const { history: fresh } = await openArchiveHistory({ store, follow: false, compaction: false });
    expect({ record: await fresh.get(session.id), heads: await fresh.commandHeads(), list: await fresh.list() }).toEqual(live);
    await Promise.all([history.close(), fresh.close()]);
  });
});

describe('an own append on a stream another service deleted and wrote again', () => {
  it('leaves the projection with the history the feed holds, not the state this service decided on', async () => {
    const store = memoryStore();
    const options = { store, follow: false, compaction: false, checkpoints: false } as const;
    const { history: a } = await openArchiveHistory(options);
    const { history: b } = await openArchiveHistory(options);
    const id = '0b7d2f4e-1111-4222-8333-444455556666';
    await a.register({ id, startedAt: '2026-01-01T00:00:00Z', state: { sessionType: 'a1' } });
    await a.checkpoint(id, { expectedVersion: 1, state: { sessionType: 'a2' } });
    // The other service completes the session (its stream is deleted) and registers the id again, up to revision 2.
    await b.complete(id, { expectedVersion: 2, state: { sessionType: 'a2', sessionObjectId: 'erased-and-again' } });
    await b.register({ id, startedAt: '2026-01-02T00:00:00Z', state: { sessionType: 'b1' } });
    await b.checkpoint(id, { expectedVersion: 1, state: { sessionType: 'b2' } });
    const types = (records: { id: string; state: unknown }[]) =>
      records.filter((record) => record.id === id).map((record) => (record.state as { sessionType?: unknown }).sessionType);
    expect(types(await a.list())).toEqual(['b2']);
    // This service's cached state of the stream is of the first life, at the same revision: the append passes.
    await a.appendTranscript(id, { role: 'user-message', text: 'hello' });
    const { history: fresh } = await openArchiveHistory(options);
    expect(types(await fresh.list())).toEqual(['b2']);
    expect(await a.list()).toEqual(await fresh.list());
    expect(await a.commandHeads()).toEqual(await fresh.commandHeads());
    await Promise.all([a.close(), b.close(), fresh.close()]);
  });
});
