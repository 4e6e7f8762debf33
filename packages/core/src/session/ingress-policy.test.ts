import { describe, expect, it } from 'vitest';
import { memoryStore } from '../kernel/index.js';
import { DEFAULT_INGRESS_POLICY, ingressPolicy } from './ingress-policy.js';
import { openSessionHistory } from './service.js';
import { openTestHistory, startConversation, steppingClock } from './test-support.fixture.js';

describe('the ingress policy', () => {
  it('defaults to terminal at the fifth failure, the next attempt 15 s later, the last five failures kept', () => {
    expect(DEFAULT_INGRESS_POLICY).toEqual({ failureLimit: 5, retryDelaySeconds: 15, retainedFailures: 5 });
    expect(ingressPolicy(undefined)).toBe(DEFAULT_INGRESS_POLICY);
    expect(ingressPolicy({ retryDelaySeconds: 60 })).toEqual({ failureLimit: 5, retryDelaySeconds: 60, retainedFailures: 5 });
  });

  it.each([
    [null, 'ingressPolicy'],
    [[], 'ingressPolicy'],
    [{ failureLimit: 0 }, 'ingressPolicy.failureLimit'],
    [{ failureLimit: 2.5 }, 'ingressPolicy.failureLimit'],
    [{ retryDelaySeconds: -1 }, 'ingressPolicy.retryDelaySeconds'],
    [{ retryDelaySeconds: 86_401 }, 'ingressPolicy.retryDelaySeconds'],
    [{ retainedFailures: '5' }, 'ingressPolicy.retainedFailures'],
    [{ retries: 3 }, 'ingressPolicy.retries'],
  ])('openSessionHistory refuses the policy %j naming %s', async (option, field) => {
    await expect(openSessionHistory({ store: memoryStore(), ingressPolicy: option as never })).rejects.toMatchObject({
      code: 'invalid_request',
      field,
    });
  });

  it('a custom policy decides the limit, the delay and the failures kept, and the events record its decisions', async () => {
    const store = memoryStore();
    const { history } = await openTestHistory({ store, ingressPolicy: { failureLimit: 3, retryDelaySeconds: 90, retainedFailures: 2 } });
    const created = await startConversation(history, 'custom-policy');
    let record = await history.requestIngress(created.id, { expectedVersion: created.version, state: created.state });
    for (let attempt = 1; attempt <= 2; attempt++) {
      record = await history.startIngress(created.id, { expectedVersion: record.version, provenanceId: 'p' });
      record = await history.failIngress(created.id, { expectedVersion: record.version, stage: 'loop', message: `failure ${attempt}` });
      expect(record.phase).toBe('ingress_pending');
      expect(Date.parse(record.ingressNextAttemptAt ?? '') - Date.parse(record.updatedAt)).toBe(90_000);
    }
    record = await history.startIngress(created.id, { expectedVersion: record.version, provenanceId: 'p' });
    record = await history.failIngress(created.id, { expectedVersion: record.version, stage: 'loop', message: 'failure 3' });
    expect(record).toMatchObject({ phase: 'ingress_failed', ingressFailureCount: 3, ingressNextAttemptAt: null });
    expect(record.ingressFailures.map((failure) => failure.attempt)).toEqual([2, 3]);
    await history.close();

    // Replay folds what was decided: a service under the default policy reads the same session.
    const reopened = await openSessionHistory({ store, clock: steppingClock('2026-07-24T00:00:00.000Z') });
    expect(await reopened.get(created.id)).toMatchObject({
      phase: 'ingress_failed',
      ingressFailureCount: 3,
      ingressFailures: record.ingressFailures,
    });
    await reopened.close();
  });

  it('releasing an interrupted attempt resets a count past the configured limit', async () => {
    const store = memoryStore();
    const strict = await openTestHistory({ store, ingressPolicy: { failureLimit: 10 } });
    const created = await startConversation(strict.history, 'release-policy');
    let record = await strict.history.requestIngress(created.id, { expectedVersion: created.version, state: created.state });
    for (let attempt = 1; attempt <= 2; attempt++) {
      record = await strict.history.startIngress(created.id, { expectedVersion: record.version, provenanceId: 'p' });
      record = await strict.history.failIngress(created.id, { expectedVersion: record.version, stage: 'loop', message: 'boom' });
    }
    record = await strict.history.startIngress(created.id, { expectedVersion: record.version, provenanceId: 'p' });
    await strict.history.close();

    // Two failures are past a limit of one: the release starts the count again.
    const lenient = await openSessionHistory({ store, ingressPolicy: { failureLimit: 1 } });
    expect(await lenient.releaseInterruptedIngress()).toEqual([created.id]);
    expect(await lenient.get(created.id)).toMatchObject({ phase: 'ingress_pending', ingressFailureCount: 0 });
    await lenient.close();
  });
});
