import { describe, expect, it } from 'vitest';
import { decideComplete, decideEnqueue, decideFailIngress, decideStart, type Decision } from './decisions.js';
import { SessionHistoryError } from './errors.js';
import { commandIdFor, isUuid, legacySessionIdForStart, sessionIdForStart, uuidV5 } from './ids.js';
import { applySessionEvent, initialSessionState } from './reducer.js';
import type { SessionStreamState } from './model.js';
import { sanitiseFileName, sanitiseMediaType } from './view.js';
import { DEFAULT_INGRESS_POLICY } from './ingress-policy.js';

const SESSION = sessionIdForStart('decisions', 1);
const NOW = new Date('2026-07-23T12:00:00.000Z');

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
  decideStart(state, { idempotencyId: 'decisions', startedAt: '2026-07-23T00:00:00Z', sessionType: 'free-time', durationMinutes: 30 }, NOW);

describe('decisions (pure, no store)', () => {
  it('a free-time start records its intent and the start key', () => {
    const state = given(started);
    expect(state.record).toMatchObject({ id: SESSION, phase: 'active', version: 1, updatedAt: '2026-07-23T00:00:00Z' });
    expect(state.record?.state).toMatchObject({
      stateVersion: 3,
      startIdempotencyId: 'decisions',
      selfTimeIntent: { requestedAt: '2026-07-23T00:00:00Z', durationMinutes: 30, customPrompt: '' },
      orchestration: { owner: 'backend', status: 'idle' },
    });
    expect(decideStart(state, { idempotencyId: 'decisions', startedAt: '2026-07-23T00:00:00Z', sessionType: 'x' }, NOW)).toEqual([]);
  });

  it('a failure records its attempt, whether it is terminal, and the next attempt as the default policy says', () => {
    const state = given(started, () => [{ type: 'IngressStarted', data: { at: NOW.toISOString(), provenanceId: 'p' } }]);
    const events = decideFailIngress(state, { expectedVersion: 2, stage: 'loop', message: 'boom' }, NOW);
    expect(events).toEqual([
      {
        type: 'IngressFailed',
        data: expect.objectContaining({
          attempt: 1,
          terminal: false,
          nextAttemptAt: new Date(NOW.getTime() + DEFAULT_INGRESS_POLICY.retryDelaySeconds * 1000).toISOString(),
          retainedFailures: DEFAULT_INGRESS_POLICY.retainedFailures,
        }),
      },
    ]);
    expect(decideFailIngress(state, { expectedVersion: 1, stage: 'loop', message: 'boom' }, NOW)).toMatchObject({
      code: 'state_conflict',
      message: 'Expected session version 1, found 2.',
    });
  });

  it('enqueue derives the command id from the session and the idempotency id, and numbers commands in order', () => {
    const state = given(started, (s) => decideEnqueue(s, { idempotencyId: 'a', kind: 'k', payload: {} }, NOW));
    const next = decideEnqueue(state, { idempotencyId: 'b', kind: 'k', payload: {} }, NOW);
    expect(next).toEqual([
      { type: 'CommandEnqueued', data: { command: expect.objectContaining({ id: commandIdFor(SESSION, 'b'), sequence: 2, createdAt: NOW.toISOString() }) } },
    ]);
    expect(decideEnqueue(state, { idempotencyId: 'a', kind: 'other', payload: {} }, NOW)).toEqual([]);
  });

  it('completion stamps the receipt with the session and keeps the raw receipt in the state', () => {
    const state = given(started);
    const events = decideComplete(
      state,
      { expectedVersion: 1, state: { sessionType: 'free-time', sessionObjectId: 'O1', commitReceipt: { sessionObjectId: 'O1', transactionId: 'T' } } },
      NOW,
      { completion: 'archive-and-delete' },
    );
    expect(events).toEqual([
      {
        type: 'SessionCompleted',
        data: {
          at: NOW.toISOString(),
          state: { sessionType: 'free-time', sessionObjectId: 'O1', commitReceipt: { sessionObjectId: 'O1', transactionId: 'T' } },
          receipt: {
            transactionId: 'T',
            sessionObjectId: 'O1',
            sessionId: SESSION,
            sessionType: 'free-time',
            createdAt: '2026-07-23T00:00:00Z',
            committedAt: NOW.toISOString(),
            nodeIds: {},
            objectIds: {},
          },
        },
      },
    ]);
  });
});

describe('ids and sanitising', () => {
  it('name-based UUIDs match the published version 5 example', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe('2ed6657d-e927-568b-95e1-2665a8aea6a2');
    expect(isUuid(sessionIdForStart('any key', 1))).toBe(true);
    expect(sessionIdForStart('a', 1)).toBe(sessionIdForStart('a', 1));
    expect(sessionIdForStart('a', 1)).not.toBe(sessionIdForStart('b', 1));
    expect(sessionIdForStart('a', 2)).not.toBe(sessionIdForStart('a', 1));
    expect(sessionIdForStart('a', 1)).not.toBe(legacySessionIdForStart('a'));
  });

  it('media types need one slash and no spaces or controls', () => {
    expect(sanitiseMediaType('image/png')).toBe('image/png');
    for (const bad of ['', '  ', 'png', 'text/plain; charset=utf-8', 'image/\u0000png', 'image/png\u00a0']) {
      expect(sanitiseMediaType(bad)).toBe('application/octet-stream');
    }
  });

  it('file names keep printable ASCII except quote, backslash, slash and semicolon, up to 255 characters', () => {
    expect(sanitiseFileName('a\\b"c/d;e f\tg😀.txt')).toBe('a_b_c_d_e_f_g_.txt');
    expect(sanitiseFileName('')).toBe('uploaded-object');
    expect(sanitiseFileName('x'.repeat(300))).toHaveLength(255);
  });
});
