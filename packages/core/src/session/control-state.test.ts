import { describe, expect, it } from 'vitest';
import { controlState } from './control-state.js';
import { openArchiveHistory } from './test-support.fixture.js';

const PRESENTATION = ['transcript', 'boxCount', 'eventCount', 'boxes', 'events', 'context', 'transcriptText'];

describe('controlState', () => {
  it('keeps only authoritative lifecycle and recovery fields, at the top and inside historyIngress', () => {
    const saved = controlState({
      sessionType: 'conversation',
      pendingTurn: true,
      transcript: [{ role: 'user', content: 'hello' }],
      boxCount: 1,
      eventCount: 1,
      boxes: { '1': { id: 1 } },
      events: [{ id: 1 }],
      context: { estimatedTokens: 10 },
      transcriptText: 'hello',
      historyIngress: {
        format: 'session-file',
        sessionType: 'history-ingress',
        completed: true,
        commitReceipt: { sessionObjectId: 'A1234567' },
        boxes: { '2': { id: 2 } },
        events: [{ id: 2 }],
        context: { estimatedTokens: 20 },
        transcriptText: 'ingress',
      },
      unrecognized: 'discard me',
    });

    expect(saved.sessionType).toBe('conversation');
    expect(saved.pendingTurn).toBe(true);
    const nested = saved.historyIngress as Record<string, unknown>;
    expect(nested.sessionType).toBe('history-ingress');
    expect(nested.completed).toBe(true);
    expect(nested.commitReceipt).toEqual({ sessionObjectId: 'A1234567' });
    for (const field of PRESENTATION) {
      expect(saved, `${field} was retained`).not.toHaveProperty(field);
      expect(nested, `nested ${field} was retained`).not.toHaveProperty(field);
    }
    expect(saved).not.toHaveProperty('unrecognized');
    expect(controlState({ commitReceipt: null })).toEqual({});
  });

  it('projects a non-object to an empty state and copies values instead of sharing them', () => {
    expect(controlState([1, 2])).toEqual({});
    expect(controlState({ historyIngress: 'text' })).toEqual({ historyIngress: {} });
    const orchestration = { owner: 'backend' };
    const saved = controlState({ orchestration });
    orchestration.owner = 'changed';
    expect(saved.orchestration).toEqual({ owner: 'backend' });
  });

  it('uses the configured key list when one is given', () => {
    expect(controlState({ a: 1, b: 2, historyIngress: { a: 3, c: 4 } }, ['a', 'historyIngress'])).toEqual({ a: 1, historyIngress: { a: 3 } });
  });

  it('a service with its own whitelist stores only those keys', async () => {
    const { history } = await openArchiveHistory({ controlStateKeys: ['sessionType', 'customerId'] });
    const { value } = await history.start({ idempotencyId: 'custom', startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' });
    const record = await history.checkpoint(value.id, { expectedVersion: 1, state: { sessionType: 'conversation', customerId: 'c-1', pendingTurn: true } });
    expect(record.state.customerId).toBe('c-1');
    expect(record.state.pendingTurn).toBeUndefined();
  });
});
