import { describe, expect, it } from 'vitest';
import type { Call } from './calls.js';
import { ARCHIVE_POLICIES } from './calls.fixture.js';
import { checkScript } from './equivalence.fixture.js';
import type { Step } from './runner.js';
import { STORE_KINDS } from './subjects.js';

/** The value a step returned; fails the test when the call was refused. */
function okValue(step: Step | undefined): any {
  expect(step?.outcome, step?.call).toHaveProperty('ok');
  return (step?.outcome as { ok: unknown }).ok;
}

/** The steps of `calls` under the archive policies, which every store must take identically (sessions s0 and s1 are started first). */
const run = (calls: readonly Call[]) => checkScript(STORE_KINDS, calls, ARCHIVE_POLICIES);

describe('fixed scripts on every store, under the default completion policy (kept)', () => {
  it('a completed session stays readable, listed once under its id, refuses writes, and survives compaction and reopening', async () => {
    const steps = await checkScript(
      STORE_KINDS,
      [
        { op: 'appendTranscript', session: 0, role: 'user-message', text: 'kept line' },
        { op: 'complete', session: 0, skew: 0, objectId: 'obj-K', nested: false },
        { op: 'appendTranscript', session: 0, role: 'user-message', text: 'too late' },
        { op: 'compact', stream: 0 },
        { op: 'reopen' },
        { op: 'get', session: 0 },
        { op: 'list', phase: 'complete' },
        { op: 'start', session: 0, sessionType: 'conversation', invalid: null },
      ],
      { completion: 'keep' },
    );
    expect(steps[2]?.outcome).toMatchObject({ error: { code: 'state_conflict', message: 'Session is in phase complete; it no longer changes.' } });
    const kept = okValue(steps[5]);
    expect(kept).toMatchObject({ phase: 'complete', state: { sessionObjectId: 'obj-K' } });
    expect(kept.state.transcript.map((line: { content: string }) => line.content)).toEqual(['kept line']);
    expect(okValue(steps[6]).map((record: { id: string }) => record.id)).toEqual([kept.id]);
    expect(okValue(steps[7])).toMatchObject({ created: true, value: { version: 1, phase: 'active' } });
    expect(okValue(steps[7]).value.id).not.toBe(kept.id);
  });
});

describe('fixed scripts on every store', () => {
  it('a blob two sessions share outlives the deletion of one, across reopening and compaction', async () => {
    const steps = await run([
      { op: 'stageObject', session: 0, fileName: 'a.txt', mediaType: 'text/plain', bytes: [104, 105] },
      { op: 'stageObject', session: 1, fileName: 'b.txt', mediaType: 'text/plain', bytes: [104, 105] },
      { op: 'reopen' },
      { op: 'complete', session: 0, skew: 0, objectId: 'obj-A', nested: false },
      { op: 'reopen' },
      { op: 'compact', stream: 1 },
      { op: 'object', session: 1, pending: 1 },
      { op: 'object', session: 0, pending: 1 },
    ]);
    expect(okValue(steps[6])).toEqual({ fileName: 'b.txt', mediaType: 'text/plain', bytes: { bytes: '6869' } });
    expect(steps[7]?.outcome).toEqual({ error: { name: 'SessionHistoryError', code: 'not_found', message: 'Session not found.' } });
  });

  it('a start key used again after its session completed starts a new session at version 1', async () => {
    const steps = await run([
      { op: 'appendTranscript', session: 0, role: 'user-message', text: 'first life' },
      { op: 'compact', stream: 0 },
      { op: 'complete', session: 0, skew: 0, objectId: 'obj-A', nested: true },
      { op: 'start', session: 0, sessionType: 'conversation', invalid: null },
      { op: 'reopen' },
      { op: 'get', session: 0 },
      { op: 'list', phase: 'complete' },
    ]);
    expect(okValue(steps[3])).toMatchObject({ created: true, value: { version: 1, phase: 'active' } });
    expect(okValue(steps[5]).state.events).toEqual([]);
    expect(okValue(steps[6]).map((record: { id: string }) => record.id)).toEqual(['obj-A']);
  });

  it('the fifth failed attempt is terminal whatever compactions and reopenings come between, and a retry starts over', async () => {
    const attempt: Call = { op: 'failedAttempt', session: 1, code: null };
    const steps = await run([
      { op: 'requestIngress', session: 1, skew: 0, state: { sessionType: 'free-time' } },
      attempt,
      attempt,
      { op: 'compact', stream: 1 },
      attempt,
      { op: 'reopen' },
      attempt,
      { op: 'compact', stream: 1 },
      attempt,
      { op: 'retryIngress', session: 1, skew: 0, state: { sessionType: 'free-time' } },
    ]);
    const fifth = okValue(steps[8]).failed;
    expect(fifth).toMatchObject({ phase: 'ingress_failed', ingressFailureCount: 5, ingressNextAttemptAt: null });
    expect(okValue(steps[9])).toMatchObject({ phase: 'ingress_pending', ingressFailureCount: 0 });
  });

  it('a receipt recorded twice keeps the first, through compaction of the catalog and reopening', async () => {
    const steps = await run([
      { op: 'recordCompletion', objectId: 'obj-B', session: null },
      { op: 'compact', stream: 'catalog' },
      { op: 'reopen' },
      { op: 'complete', session: 1, skew: 0, objectId: 'obj-B', nested: false },
      { op: 'compact', stream: 'catalog' },
      { op: 'reopen' },
      { op: 'list', phase: null },
    ]);
    const listed = okValue(steps[6]) as { id: string; phase: string; startedAt: string }[];
    expect(listed.filter((record) => record.id === 'obj-B')).toHaveLength(1);
    expect(listed.map((record) => record.phase).sort()).toEqual(['active', 'complete']);
  });
});
