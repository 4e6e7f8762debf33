import { describe, expect, it } from 'vitest';
import type { SessionStreamState } from './model.js';
import { openArchiveHistory, openTestHistory, startConversation } from './test-support.fixture.js';

describe('listPage', () => {
  it('pages the sessions and receipts list() returns, with open commands, failure counts and idempotency keys', async () => {
    const { history } = await openArchiveHistory();
    const busy = await startConversation(history, 'key-busy');
    await history.enqueue(busy.id, { idempotencyId: 'c1', kind: 'message' });
    await history.enqueue(busy.id, { idempotencyId: 'c2', kind: 'message' });
    const job = (await history.start({ idempotencyId: 'key-job', startedAt: '2026-07-23T00:00:00Z', sessionType: 'job' })).value;
    const done = await startConversation(history, 'key-done');
    await history.complete(done.id, { expectedVersion: 1, state: { sessionObjectId: 'OBJ-1' } });

    const page = await history.listPage();
    expect(page.total).toBe(3);
    expect(page.nextCursor).toBeNull();
    expect(page.sessions.map((row) => row.id).sort()).toEqual((await history.list()).map((record) => record.id).sort());
    expect(page.sessions.find((row) => row.id === busy.id)).toMatchObject({
      phase: 'active',
      sessionType: 'conversation',
      openCommands: 2,
      failureCount: 0,
      idempotencyKey: 'key-busy',
      receipt: false,
    });
    expect(page.sessions.find((row) => row.id === 'OBJ-1')).toMatchObject({ phase: 'complete', receipt: true, sessionObjectId: 'OBJ-1' });

    expect((await history.listPage({ phase: 'complete' })).sessions.map((row) => row.id)).toEqual(['OBJ-1']);
    expect((await history.listPage({ sessionType: 'job' })).sessions.map((row) => row.id)).toEqual([job.id]);
    expect((await history.listPage({ search: 'KEY-JOB' })).sessions.map((row) => row.id)).toEqual([job.id]);
    expect((await history.listPage({ search: busy.id.slice(0, 8) })).sessions.map((row) => row.id)).toEqual([busy.id]);
    expect((await history.listPage({ search: 'obj-' })).sessions.map((row) => row.id)).toEqual(['OBJ-1']);
  });

  it('lists a completed session the service keeps once, under its own id, with its session object id', async () => {
    const { history } = await openTestHistory();
    const done = await startConversation(history, 'key-done');
    await history.appendTranscript(done.id, { role: 'user-message', text: 'last words' });
    await history.complete(done.id, { expectedVersion: 1, state: { sessionObjectId: 'OBJ-1' } });
    const page = await history.listPage();
    expect(page.total).toBe(1);
    expect(page.sessions).toEqual([expect.objectContaining({ id: done.id, phase: 'complete', sessionObjectId: 'OBJ-1', receipt: false })]);
    expect(page.sessions.map((row) => row.id)).toEqual((await history.list()).map((record) => record.id));
    expect(page.sessions[0]?.lastActivityAt).toBe((await history.get(done.id)).lastActivityAt);
    expect((await history.listPage({ search: 'obj-1' })).sessions.map((row) => row.id)).toEqual([done.id]);
  });

  it('sorts by any column, ties by id, and walks every row once page by page', async () => {
    const { history } = await openTestHistory();
    const ids: string[] = [];
    for (let index = 0; index < 7; index++) {
      const record = await startConversation(history, `key-${index}`);
      ids.push(record.id);
      for (let command = 0; command < index % 3; command++) await history.enqueue(record.id, { idempotencyId: `c${command}`, kind: 'message' });
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await history.listPage({ sort: 'openCommands', order: 'asc', limit: 3, ...(cursor === undefined ? {} : { cursor }) });
      expect(page.total).toBe(7);
      seen.push(...page.sessions.map((row) => row.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    const expected = ids.map((id, index) => ({ id, open: index % 3 })).sort((a, b) => a.open - b.open || (a.id < b.id ? -1 : 1));
    expect(seen).toEqual(expected.map((row) => row.id));
    expect((await history.listPage({ sort: 'id', order: 'desc', limit: 1 })).sessions[0]?.id).toBe([...ids].sort().at(-1));
  });

  it('refuses a malformed query with invalid_request naming the field', async () => {
    const { history } = await openTestHistory();
    await expect(history.listPage({ limit: 0 })).rejects.toMatchObject({ code: 'invalid_request', field: 'query.limit' });
    await expect(history.listPage({ cursor: 'abc' })).rejects.toMatchObject({ code: 'invalid_request', field: 'query.cursor' });
    await expect(history.listPage({ sort: 'nope' as never })).rejects.toMatchObject({ code: 'invalid_request', field: 'query.sort' });
  });
});

describe('listPage over many sessions', () => {
  it('gives the same order on a page far from the start as on the first pages', async () => {
    const { listPage, listQuerySchema } = await import('./list-query.js');
    const { newLifecycleRecord } = await import('./model.js');
    const { initialSessionState } = await import('./reducer.js');
    const sessions: [string, { revision: number; state: SessionStreamState }][] = [];
    for (let index = 0; index < 2500; index++) {
      const id = `00000000-0000-4000-8000-${String((index * 7919) % 2500).padStart(12, '0')}`;
      const minute = String(index % 60).padStart(2, '0');
      const record = newLifecycleRecord({ id, phase: 'active', startedAt: `2026-07-23T00:${minute}:00Z`, updatedAt: `2026-07-23T00:${minute}:00Z`, state: {} });
      sessions.push([
        `session-${id}`,
        {
          revision: 1,
          state: { ...initialSessionState(id), record },
        },
      ]);
    }
    const query = (cursor?: string, limit = 100) =>
      listQuerySchema.parse({ sort: 'startedAt', order: 'asc', limit, ...(cursor === undefined ? {} : { cursor }) });
    const all = listPage({ sessions, receipts: [] }, query(undefined, 1000));
    const walked = [...all.sessions];
    for (const cursor of ['1000', '2000']) walked.push(...listPage({ sessions, receipts: [] }, query(cursor, 1000)).sessions);
    expect(walked).toHaveLength(2500);
    const expected = [...walked].sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : a.id < b.id ? -1 : 1));
    expect(walked.map((row) => row.id)).toEqual(expected.map((row) => row.id));
    expect(listPage({ sessions, receipts: [] }, query('2400')).sessions.map((row) => row.id)).toEqual(expected.slice(2400).map((row) => row.id));
  });
});
