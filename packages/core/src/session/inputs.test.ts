import { describe, expect, it } from 'vitest';
import { isRfc3339 } from './inputs.js';
import { feedLength, openTestHistory, startConversation } from './test-support.fixture.js';
import type { SessionHistory } from './service.js';

/** `levels` arrays nested in each other around a 0. */
function nested(levels: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

const START = { startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' };
const NOT_A_UUID = 'session-42';
const MISSING = '00000000-0000-4000-8000-00000000abcd';

/** Runs `call` and checks it is refused with `invalid_request` and `message`, writing nothing. */
async function expectRefused(call: (history: SessionHistory, id: string) => Promise<unknown>, message: string | RegExp) {
  const { history, store } = await openTestHistory();
  const { id } = await startConversation(history, 'existing');
  const before = await feedLength(store);
  const failure = await call(history, id).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failure).toMatchObject({ code: 'invalid_request' });
  if (typeof message === 'string') expect((failure as Error).message).toBe(message);
  else expect((failure as Error).message).toMatch(message);
  expect(await feedLength(store)).toBe(before);
}

describe('bad input is refused with invalid_request naming the field, and nothing is written', () => {
  it.each([
    ['a wrong type', (h: SessionHistory, id: string) => h.checkpoint(id, { expectedVersion: '1' as unknown as number, state: {} }), /^expectedVersion: /],
    ['a missing field', (h: SessionHistory, id: string) => h.failIngress(id, { expectedVersion: 1, message: 'm' } as never), /^stage: /],
    ['a missing argument', (h: SessionHistory) => h.start(undefined as never), /^input: /],
    ['an unknown phase', (h: SessionHistory) => h.list({ phase: 'paused' as never }), /^options\.phase: /],
    ['an unknown transcript role', (h: SessionHistory, id: string) => h.appendTranscript(id, { role: 'pending-object' as never, text: 'x' }), /^role: /],
    ['a non-integer version', (h: SessionHistory, id: string) => h.startIngress(id, { expectedVersion: 1.5, provenanceId: 'p' }), /^expectedVersion: /],
    [
      'a state that is not an object',
      (h: SessionHistory, id: string) => h.checkpoint(id, { expectedVersion: 1, state: [] as never }),
      /^state: expected a JSON object/,
    ],
    [
      'a state holding a function',
      (h: SessionHistory, id: string) => h.checkpoint(id, { expectedVersion: 1, state: { channel: { send: () => 1 } } as never }),
      /^state\.channel\.send: /,
    ],
    [
      'a state holding NaN',
      (h: SessionHistory, id: string) => h.requestIngress(id, { expectedVersion: 1, state: { roundsUsed: Number.NaN } }),
      /^state\.roundsUsed: /,
    ],
    [
      'a nested __proto__ key in a state',
      (h: SessionHistory, id: string) =>
        h.complete(id, { expectedVersion: 1, state: JSON.parse('{"sessionObjectId":"A","historyIngress":{"x":[{"__proto__":{"polluted":true}}]}}') }),
      'state.historyIngress.x.0.__proto__: the key "__proto__" is not allowed',
    ],
    [
      'a __proto__ key in a command payload',
      (h: SessionHistory, id: string) => h.enqueue(id, { idempotencyId: 'm', kind: 'message', payload: JSON.parse('{"__proto__":1}') }),
      'payload.__proto__: the key "__proto__" is not allowed',
    ],
    [
      'a __proto__ key in the application data (it would not read back)',
      (h: SessionHistory, id: string) => h.checkpoint(id, { expectedVersion: 1, data: JSON.parse('{"notes":[{"__proto__":1}]}') }),
      'data.notes[0].__proto__: the key "__proto__" is not allowed',
    ],
    ['object bytes that are not bytes', (h: SessionHistory, id: string) => h.stageObject(id, { mediaType: 'image/png', bytes: [1, 2] as never }), /^bytes: /],
    ['a command id that is not a string', (h: SessionHistory) => h.claimCommand(42 as never), /^commandId: /],
    [
      'a receipt without its object id',
      (h: SessionHistory) => h.recordCompletion({ sessionObjectId: 'A', commitReceipt: {} as never }),
      /^commitReceipt\.sessionObjectId: /,
    ],
    ['an empty session object id', (h: SessionHistory) => h.recordCompletion({ sessionObjectId: '' }), /^sessionObjectId: /],
    [
      'a payload nested 10,000 levels deep',
      (h: SessionHistory, id: string) => h.enqueue(id, { idempotencyId: 'm', kind: 'message', payload: nested(10_000) as never }),
      /^payload: .*deeper than 256 levels/,
    ],
    [
      'a state nested past the limit',
      (h: SessionHistory, id: string) => h.checkpoint(id, { expectedVersion: 1, state: { channel: nested(300) as never } }),
      /^state: .*deeper than 256 levels/,
    ],
    [
      'a payload whose getter throws',
      (h: SessionHistory, id: string) =>
        h.enqueue(id, {
          idempotencyId: 'm',
          kind: 'message',
          payload: {
            get text(): string {
              throw new Error('no text');
            },
          } as never,
        }),
      /^payload: .*no text/,
    ],
  ])('%s', async (_name, call, message) => {
    await expectRefused(call, message);
  });

  it.each([
    ['get', (h: SessionHistory) => h.get(NOT_A_UUID)],
    ['enqueue', (h: SessionHistory) => h.enqueue(NOT_A_UUID, { idempotencyId: 'm', kind: 'message' })],
    ['checkpoint', (h: SessionHistory) => h.checkpoint(NOT_A_UUID, { expectedVersion: 1, state: {} })],
    ['stop', (h: SessionHistory) => h.stop(NOT_A_UUID)],
    ['appendTranscript', (h: SessionHistory) => h.appendTranscript(NOT_A_UUID, { role: 'user-message', text: 'x' })],
    ['object', (h: SessionHistory) => h.object(NOT_A_UUID, 'pending:1')],
    ['register', (h: SessionHistory) => h.register({ id: NOT_A_UUID, startedAt: '2026-07-23T00:00:00Z', state: {} })],
    ['recordCompletion', (h: SessionHistory) => h.recordCompletion({ sessionObjectId: 'A', sessionId: NOT_A_UUID })],
  ])('%s with a non-UUID session id: "invalid session ID"', async (_name, call) => {
    await expectRefused(call, 'invalid session ID');
  });

  it.each(['yesterday', '2026-07-23', '2026-02-30T00:00:00Z', '2026-07-23T24:00:00Z', '2026-07-23T00:00:00', '2026-07-23T00:00:00+25:00'])(
    'a start at %j: "startedAt must be an RFC 3339 timestamp"',
    async (startedAt) => {
      await expectRefused((h) => h.start({ idempotencyId: 'new', ...START, startedAt }), 'startedAt must be an RFC 3339 timestamp');
    },
  );

  it.each([
    ['empty', ''],
    ['256 ASCII bytes', 'x'.repeat(256)],
    ['128 two-byte characters', 'é'.repeat(128)],
  ])('an idempotency id that is %s: "idempotencyId must contain between 1 and 255 bytes"', async (_name, idempotencyId) => {
    await expectRefused((h) => h.start({ idempotencyId, ...START }), 'idempotencyId must contain between 1 and 255 bytes');
    await expectRefused((h, id) => h.enqueue(id, { idempotencyId, kind: 'message' }), 'idempotencyId must contain between 1 and 255 bytes');
  });

  it('accepts an idempotency id of exactly 255 bytes and RFC 3339 times with offsets and fractions', async () => {
    const { history } = await openTestHistory();
    const started = await history.start({ idempotencyId: `${'é'.repeat(127)}x`, ...START, startedAt: '2026-07-23t10:20:30.123456+02:00' });
    expect(started.created).toBe(true);
    expect(isRfc3339('2024-02-29T23:59:60Z')).toBe(true);
    expect(isRfc3339('2023-02-29T00:00:00Z')).toBe(false);
  });

  it('"Object ID must have the form pending:N." for any other object id', async () => {
    for (const pendingId of ['pending:0', 'pending:', 'pending:-1', 'object:1', 'pending:1x']) {
      await expectRefused((h, id) => h.object(id, pendingId), 'Object ID must have the form pending:N.');
    }
  });
});

describe('error texts', () => {
  it('an unknown session is "Session not found." for every call that names one', async () => {
    const { history } = await openTestHistory();
    const calls: (() => Promise<unknown>)[] = [
      () => history.get(MISSING),
      () => history.enqueue(MISSING, { idempotencyId: 'm', kind: 'message' }),
      () => history.stop(MISSING),
      () => history.appendTranscript(MISSING, { role: 'user-message', text: 'x' }),
      () => history.stageObject(MISSING, { mediaType: 'image/png', bytes: new Uint8Array() }),
      () => history.object(MISSING, 'pending:1'),
      () => history.checkpoint(MISSING, { expectedVersion: 1, state: {} }),
      () => history.requestIngress(MISSING, { expectedVersion: 1, state: {} }),
      () => history.startIngress(MISSING, { expectedVersion: 1, provenanceId: 'p' }),
      () => history.completeIngress(MISSING, { expectedVersion: 1 }),
      () => history.failIngress(MISSING, { expectedVersion: 1, stage: 's', message: 'm' }),
      () => history.retryIngress(MISSING, { expectedVersion: 1, state: {} }),
      () => history.complete(MISSING, { expectedVersion: 1, state: { sessionObjectId: 'A' } }),
      () => history.claimCommand(MISSING),
      () => history.completeCommand(MISSING),
      () => history.cancelCommand(MISSING),
    ];
    for (const call of calls) await expect(call()).rejects.toMatchObject({ code: 'not_found', message: 'Session not found.' });
  });

  it('objects need an active session', async () => {
    const { history } = await openTestHistory();
    const record = await startConversation(history, 'inactive');
    await history.stop(record.id);
    await expect(history.stageObject(record.id, { mediaType: 'image/png', bytes: new Uint8Array([1]) })).rejects.toMatchObject({
      code: 'state_conflict',
      message: 'Objects can only be supplied to an active session.',
    });
  });

  it('a cancelled command can still complete, a complete one cannot be cancelled', async () => {
    const { history } = await openTestHistory();
    const record = await startConversation(history, 'cancel');
    const command = (await history.enqueue(record.id, { idempotencyId: 'm', kind: 'message' })).value;
    expect(await history.cancelCommand(command.id)).toMatchObject({ cancelRequested: true, status: 'pending' });
    await history.claimCommand(command.id);
    await history.completeCommand(command.id, { outcome: { cancelled: true } });
    await expect(history.cancelCommand(command.id)).rejects.toMatchObject({ code: 'state_conflict', message: 'Command is already complete.' });
  });
});
