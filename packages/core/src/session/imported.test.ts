import { describe, expect, it } from 'vitest';
import { memoryStore } from '../kernel/index.js';
import { sessionStream, startKeyStream } from './ids.js';
import { newLifecycleRecord, type LifecycleRecord, type SessionCommand } from './model.js';
import { openSessionHistory } from './service.js';
import { steppingClock } from './test-support.fixture.js';

const id = '9078bb6e-0931-4477-9ce9-b1430d0335a2';

function importedRecord(overrides: Partial<LifecycleRecord> = {}): LifecycleRecord {
  return {
    ...newLifecycleRecord({
      id,
      phase: 'active',
      startedAt: '2026-07-24T00:00:00Z',
      updatedAt: '2026-07-24T00:00:02Z',
      state: { startIdempotencyId: 'start-1', sessionType: 'conversation' },
    }),
    version: 7,
    ...overrides,
  };
}

const command: SessionCommand = {
  id: 'command-1',
  sessionId: id,
  sequence: 4,
  enqueueOrder: 0,
  kind: 'message',
  payload: { text: 'hello' },
  status: 'pending',
  cancelRequested: false,
  outcome: null,
  createdAt: '2026-07-24T00:00:01Z',
  processingStartedAt: null,
  completedAt: null,
  idempotencyId: 'message-1',
};

/** A store holding a session imported at version 7 with one pending command, its start key bound to it. */
async function storeWithImport(record = importedRecord()) {
  const store = memoryStore();
  await store.append(
    sessionStream(id),
    [
      { type: 'SessionImported', data: { at: '2026-07-25T00:00:00Z', source: 'legacy', record } },
      { type: 'CommandImported', data: { at: '2026-07-25T00:00:00Z', command } },
    ],
    { expectedRevision: 'no_stream' },
  );
  await store.append(
    startKeyStream('start-1'),
    [{ type: 'StartKeyBound', data: { at: '2026-07-25T00:00:00Z', idempotencyId: 'start-1', incarnation: 1, sessionId: id } }],
    {
      expectedRevision: 'no_stream',
    },
  );
  return store;
}

describe('an imported session', () => {
  it('keeps its version, phase and commands, and behaves as if the service had made it', async () => {
    const store = await storeWithImport();
    const history = await openSessionHistory({ store, clock: steppingClock('2026-07-26T00:00:00.000Z') });
    const record = await history.get(id);
    expect(record).toMatchObject({ id, version: 7, phase: 'active' });

    const started = await history.start({ idempotencyId: 'start-1', startedAt: '2026-07-26T00:00:00Z', sessionType: 'conversation' });
    expect(started).toMatchObject({ created: false, value: { id, version: 7 } });

    const enqueued = await history.enqueue(id, { idempotencyId: 'message-1', kind: 'message', payload: {} });
    expect(enqueued).toMatchObject({ created: false, value: { id: 'command-1', sequence: 4 } });
    const next = await history.enqueue(id, { idempotencyId: 'message-2', kind: 'message', payload: {} });
    expect(next.value.sequence).toBe(5);

    expect((await history.commandHeads()).map((head) => head.id)).toEqual(['command-1']);
    expect((await history.claimCommand('command-1')).status).toBe('processing');
    expect((await history.checkpoint(id, { expectedVersion: 7, state: {} })).version).toBe(8);
  });

  it('carries its failures on: one more failure after four is terminal', async () => {
    const failure = {
      attempt: 4,
      at: '2026-07-24T00:00:03Z',
      stage: 'model_loop',
      code: 'ingress_error',
      message: 'transient',
      roundsUsed: null,
      contextTokens: null,
      contextWindowTokens: null,
    };
    const store = await storeWithImport(importedRecord({ phase: 'ingress_in_progress', ingressFailureCount: 4, ingressFailures: [failure] }));
    const history = await openSessionHistory({ store, clock: steppingClock('2026-07-26T00:00:00.000Z') });
    const failed = await history.failIngress(id, { expectedVersion: 7, stage: 'model_loop', message: 'again' });
    expect(failed).toMatchObject({ phase: 'ingress_failed', ingressFailureCount: 5, version: 8 });
    expect(failed.ingressFailures).toHaveLength(2);
  });

  it('a second import of the same session changes nothing', async () => {
    const store = await storeWithImport();
    await store.append(
      sessionStream(id),
      [{ type: 'SessionImported', data: { at: '2026-07-27T00:00:00Z', source: 'legacy', record: importedRecord({ version: 9 }) } }],
      {
        expectedRevision: 'any',
      },
    );
    const history = await openSessionHistory({ store });
    expect((await history.get(id)).version).toBe(7);
  });
});
