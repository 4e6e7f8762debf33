import { openSessionHistory, type EventStore, type SessionHistory } from '@sessionfold/core';

/** A transcript line a careless page would run as markup. */
export const HOSTILE_TEXT = '<img src=x onerror="window.__injected = 1"><script>window.__injected = 2</script> bold <b>claim</b>';

/** What `fill` made: the session the tests open, its idempotency key, and the completed one (kept) with its session object id. */
export interface Filled {
  history: SessionHistory;
  busyId: string;
  busyKey: string;
  quietId: string;
  completedId: string;
  completedObjectId: string;
}

/**
 * Fills `store` through a writable service (left open for later appends): a busy conversation with a hostile
 * transcript line, commands (one claimed by a worker), a staged object; a quiet job session; a completed session.
 */
export async function fill(store: EventStore): Promise<Filled> {
  const history = await openSessionHistory({ store });
  const busy = await history.start({ idempotencyId: 'ticket-4711', startedAt: '2026-07-23T09:00:00Z', sessionType: 'conversation' });
  const busyId = busy.value.id;
  await history.appendTranscript(busyId, { role: 'user-message', text: 'Can you summarise the incident report?' });
  await history.appendTranscript(busyId, { role: 'assistant-message', text: 'Sure: the nightly export stopped at 02:14 when the disk filled.' });
  await history.appendTranscript(busyId, { role: 'user-message', text: HOSTILE_TEXT });
  await history.stageObject(busyId, { fileName: 'report "final".txt', mediaType: 'text/plain', bytes: new TextEncoder().encode('incident report') });
  const first = await history.enqueue(busyId, { idempotencyId: 'cmd-1', kind: 'summarise', payload: { report: 'incident-12' } });
  await history.enqueue(busyId, { idempotencyId: 'cmd-2', kind: 'notify', payload: { channel: 'ops' } });
  await history.claimCommand(first.value.id, { worker: 'worker-a', leaseMs: 60_000 });
  const quiet = await history.start({ idempotencyId: 'nightly-job', startedAt: '2026-07-23T08:00:00Z', sessionType: 'job' });
  const done = await history.start({ idempotencyId: 'ticket-4700', startedAt: '2026-07-22T10:00:00Z', sessionType: 'conversation' });
  await history.complete(done.value.id, { expectedVersion: done.value.version, state: { sessionObjectId: 'OBJ-4700' } });
  return { history, busyId, busyKey: 'ticket-4711', quietId: quiet.value.id, completedId: done.value.id, completedObjectId: 'OBJ-4700' };
}
