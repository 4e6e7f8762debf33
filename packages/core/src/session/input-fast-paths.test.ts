import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  appendTranscriptSchema,
  checkpointSchema,
  commandIdSchema,
  commandOutcomeSchema,
  fastPathFor,
  newCommandSchema,
  sessionIdSchema,
  startSessionSchema,
} from './inputs.js';

/** A value nested `levels` arrays deep. */
function nested(levels: number): unknown {
  let value: unknown = 'x';
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

function cyclic(): unknown {
  const value: Record<string, unknown> = { a: 1 };
  value.self = value;
  return value;
}

/** An array with a hole, which JSON cannot carry. */
function holey(): unknown {
  const value: unknown[] = [1, 2, 3];
  delete value[1];
  return value;
}

function throwingGetter(): unknown {
  const value = {};
  Object.defineProperty(value, 'kind', {
    enumerable: true,
    get: () => {
      throw new Error('no');
    },
  });
  return value;
}

/** Scalars and shapes the schemas accept and refuse, the doubtful ones included. */
const oddScalar = fc.constantFrom<unknown>(
  undefined,
  null,
  0,
  -0,
  1.5,
  -3,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  2 ** 53,
  '',
  'x',
  'é'.repeat(130),
  'a'.repeat(256),
  true,
  false,
);
const oddObject = fc.constantFrom<unknown>(
  new Date(0),
  Object.create(null),
  JSON.parse('{"__proto__":{"polluted":true}}'),
  holey(),
  nested(70),
  nested(10),
  cyclic(),
  new Uint8Array(2),
  () => 1,
  Symbol('s'),
  10n,
);
const json = fc.jsonValue({ maxDepth: 3 });
const anyValue = fc.oneof(
  oddScalar,
  oddObject,
  json,
  fc.array(fc.oneof(oddScalar, json), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.oneof(oddScalar, json), { maxKeys: 3 }),
);
const text = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('', 'é'.repeat(85), 'é'.repeat(86), '😀'.repeat(63), '😀'.repeat(64), 'a'.repeat(255), 'a'.repeat(256)),
);
const instant = fc.constantFrom(
  '2026-07-23T00:00:00Z',
  '2026-07-23T10:11:12.345+02:00',
  '2026-02-30T00:00:00Z',
  '0000-02-29T00:00:00Z',
  '2026-07-23',
  'yesterday',
  '2026-07-23t00:00:00z',
);
const uuid = fc.oneof(
  fc.uuid(),
  fc.uuid().map((id) => id.toUpperCase()),
  fc.constantFrom('session-42', '', '00000000-0000-0000-0000-00000000000g'),
);

/** An object with some of `members` (each an arbitrary of its own), sometimes one more, sometimes a value instead of an object. */
function input(members: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  const record = fc.record(
    {
      ...Object.fromEntries(Object.entries(members).map(([key, arbitrary]) => [key, fc.oneof({ weight: 4, arbitrary }, { weight: 1, arbitrary: anyValue })])),
      extra: anyValue,
    },
    { requiredKeys: [] },
  );
  return fc.oneof(
    { weight: 8, arbitrary: fc.tuple(record, fc.boolean()).map(([value, extra]) => (extra ? value : withoutExtra(value))) },
    { weight: 1, arbitrary: anyValue },
    { weight: 1, arbitrary: fc.constant(throwingGetter()) },
  );
}

function withoutExtra(value: Record<string, unknown>): Record<string, unknown> {
  const { extra: _extra, ...rest } = value;
  return rest;
}

const cases: [string, z.ZodType, fc.Arbitrary<unknown>, unknown][] = [
  ['session id', sessionIdSchema, fc.oneof(uuid, anyValue), '0F0E4A1C-8C1D-4C1E-9B7F-1234567890AB'],
  ['command id', commandIdSchema, fc.oneof(text, anyValue), 'c8a7c5e2-0000-4000-8000-000000000001'],
  [
    'start',
    startSessionSchema,
    input({
      idempotencyId: text,
      startedAt: instant,
      sessionType: text,
      durationMinutes: fc.oneof(fc.double(), fc.constantFrom(null, -0, 0, 30)),
      customPrompt: fc.option(text, { nil: null }),
    }),
    { idempotencyId: 'key', startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' },
  ],
  [
    'enqueue',
    newCommandSchema,
    input({ idempotencyId: text, kind: text, payload: anyValue }),
    { idempotencyId: 'key', kind: 'run', payload: { n: 1, list: [true, null] } },
  ],
  ['completeCommand', commandOutcomeSchema, input({ outcome: anyValue, worker: text }), { outcome: { ok: true } }],
  [
    'checkpoint',
    checkpointSchema,
    input({
      expectedVersion: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.double(), fc.constant(-0)),
      state: anyValue,
      userActivity: fc.oneof(fc.boolean(), anyValue),
    }),
    { expectedVersion: 3, state: { orchestration: { step: 1 } } },
  ],
  [
    'appendTranscript',
    appendTranscriptSchema,
    input({ role: fc.constantFrom('user-message', 'assistant-message', 'pending-object', 'someone', ''), text }),
    { role: 'user-message', text: 'hello' },
  ],
];

describe('the hand-written parses of the most frequent inputs answer exactly as their schemas, or leave the input to them', () => {
  it.each(cases)('%s', (_name, schema, arbitrary, typical) => {
    const fast = fastPathFor(schema);
    if (!fast) throw new Error('no fast path');
    // A plainly well-formed input takes the fast path (otherwise it spares nothing).
    expect(fast(typical)).toStrictEqual(schema.parse(typical));
    let taken = 0;
    fc.assert(
      fc.property(arbitrary, (value) => {
        const parsed = fast(value);
        if (parsed === undefined) return;
        taken++;
        const bySchema = schema.safeParse(value);
        expect(bySchema.success).toBe(true);
        // The same values (0 and -0 told apart) with the same members in the same order: stored JSON is identical.
        expect(parsed).toStrictEqual(bySchema.data);
        expect(JSON.stringify(parsed)).toBe(JSON.stringify(bySchema.data));
      }),
      { numRuns: 2000 },
    );
    expect(taken).toBeGreaterThan(0);
  });

  it('copies what it takes: the caller changing its object afterwards changes nothing parsed', () => {
    const payload = { list: [1, { deep: 'a' }] };
    const parsed = fastPathFor(newCommandSchema)?.({ idempotencyId: 'k', kind: 'run', payload }) as { payload: typeof payload };
    payload.list.push(2);
    (payload.list[1] as { deep: string }).deep = 'b';
    expect(parsed.payload).toEqual({ list: [1, { deep: 'a' }] });
  });
});
