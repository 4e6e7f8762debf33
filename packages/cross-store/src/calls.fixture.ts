import fc from 'fast-check';
import { propertyTestEnv } from '@sessionfold/conformance';
import type { JsonObject, JsonValue, Phase } from '@sessionfold/core';
import type { Call, CallRole, CommandRef, CommandTarget, SessionRef, VersionSkew } from './calls.js';

/**
 * The service policies the generated calls are written for: the archive policies, set explicitly (a completion
 * hands the session to the catalog and deletes its stream; `state` keys outside the whitelist are dropped).
 */
export const ARCHIVE_POLICIES = { completion: 'archive-and-delete', controlState: 'project' } as const;

/** How many random sequences a property tries: `SESSIONFOLD_PROPERTY_RUNS`, else `fallback`. */
export function propertyRuns(fallback: number): number {
  return propertyTestEnv().runs ?? fallback;
}

/** `fc.assert` parameters: the run count, plus the seed and path of a failure to replay when given. */
export function propertyParameters(fallbackRuns: number): fc.Parameters<unknown> {
  const { runs, seed, path } = propertyTestEnv();
  return {
    numRuns: runs ?? fallbackRuns,
    ...(seed === undefined ? {} : { seed }),
    ...(path === undefined ? {} : { path, endOnFailure: true }),
  };
}

/**
 * Constraints of `fc.commands`: a failure prints a `replayPath` next to the counterexample; with
 * `SESSIONFOLD_PROPERTY_REPLAY_PATH` set to it (and the seed and path), the shrunk sequence replays exactly.
 */
export function commandsConstraints(maxCommands: number): fc.CommandsContraints {
  const env = propertyTestEnv();
  return { maxCommands: env.maxCommands ?? maxCommands, size: 'max', ...(env.replayPath === undefined ? {} : { replayPath: env.replayPath }) };
}

const started: fc.Arbitrary<SessionRef> = fc.constantFrom<SessionRef>(0, 1, 2);
// Mostly sessions that can exist; now and then the one that never does.
const session: fc.Arbitrary<SessionRef> = fc.oneof(
  { arbitrary: fc.constant<SessionRef>(0), weight: 4 },
  { arbitrary: fc.constant<SessionRef>(1), weight: 3 },
  { arbitrary: fc.constant<SessionRef>(2), weight: 2 },
  { arbitrary: fc.constant<SessionRef>(3), weight: 1 },
);
const command: fc.Arbitrary<CommandTarget> = fc.oneof(
  { arbitrary: fc.constant<CommandTarget>('head'), weight: 2 },
  { arbitrary: fc.constantFrom<CommandRef>(0, 1, 2), weight: 1 },
);
const skew: fc.Arbitrary<VersionSkew> = fc.oneof(
  { arbitrary: fc.constant<VersionSkew>(0), weight: 5 },
  { arbitrary: fc.constantFrom<VersionSkew>(-1, 1), weight: 1 },
);
const role: fc.Arbitrary<CallRole> = fc.constantFrom<CallRole>('user-message', 'assistant-message', 'system-error', 'tool-result');
const phase: fc.Arbitrary<Phase | null> = fc.constantFrom<Phase | null>(null, 'active', 'ingress_pending', 'ingress_failed', 'complete');
// Values a store must hand back exactly as the others do: escapes, lone surrogates, NUL, extreme numbers, -0, `__proto__` as a key.
const awkward: fc.Arbitrary<JsonValue> = fc.constantFrom<JsonValue>(
  -0,
  5e-324,
  1e21,
  12345678901234567890,
  0.1 + 0.2,
  'a\u0000b',
  '\ud800 lone',
  '\u2028\u2029',
  JSON.parse('{"__proto__":{"x":1},"constructor":null}') as JsonValue,
);
const small: fc.Arbitrary<JsonValue> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<JsonValue>({}, { ok: true }, [1, 'two', null], 'é ☃') },
  { weight: 1, arbitrary: fc.integer({ min: -3, max: 3 }) },
  { weight: 1, arbitrary: awkward },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue> },
);
const text: fc.Arbitrary<string> = fc.constantFrom(
  'hello',
  '',
  'line one\nline two',
  'é ☃ 😀',
  'a\u0000b \ud800',
  '{"kind":{"type":"box_created","content":{"text":"boxed"}}}',
);
const controlState: fc.Arbitrary<JsonObject> = fc.record(
  {
    sessionType: fc.constantFrom('conversation', 'free-time'),
    pendingTurn: fc.boolean(),
    channel: fc.constantFrom('web', 'sms'),
    notKept: fc.constant('dropped by the whitelist'),
    commitReceipt: fc.constant(null),
    sessionObjectId: fc.constantFrom('obj-A', 'obj-C'),
  },
  { requiredKeys: [] },
);
const objectId: fc.Arbitrary<string> = fc.constantFrom('obj-A', 'obj-B');

/** Any call of a random sequence, weighted towards the calls that move a session along. */
export const callArbitrary: fc.Arbitrary<Call> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('start' as const),
      session: started,
      sessionType: fc.constantFrom('conversation' as const, 'free-time' as const),
      invalid: fc.oneof({ arbitrary: fc.constant(null), weight: 8 }, { arbitrary: fc.constantFrom('startedAt' as const, 'idempotencyId' as const), weight: 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('register' as const), session: fc.constantFrom<SessionRef>(2, 3), state: controlState }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('get' as const), session }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('list' as const), phase }) },
  { weight: 1, arbitrary: fc.constant({ op: 'commandHeads' as const }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('enqueue' as const),
      session,
      command: fc.constantFrom<CommandRef>(0, 1, 2),
      kind: fc.constantFrom('message', 'tool'),
      payload: small,
    }),
  },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('claimCommand' as const), session, command }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('completeCommand' as const), session, command, outcome: small }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancelCommand' as const), session, command }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('stop' as const), session: fc.constantFrom<SessionRef>(1, 2, 3) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('checkpoint' as const), session, skew, state: controlState, userActivity: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('requestIngress' as const), session, skew, state: controlState }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('startIngress' as const), session, skew, provenanceId: fc.constantFrom('prov-1', 'prov-2') }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('failIngress' as const),
      session,
      skew,
      code: fc.constantFrom(null, 'timeout', 'input_too_large', 'input_too_large'),
      message: fc.constantFrom('model timed out', 'too big'),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('failedAttempt' as const), session, code: fc.constantFrom(null, null, null, 'input_too_large') }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('retryIngress' as const), session, skew, state: controlState }) },
  { weight: 2, arbitrary: fc.constant({ op: 'releaseInterruptedIngress' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('completeIngress' as const), session, skew }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('appendTranscript' as const), session, role, text }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('appendOversize' as const), session }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('stageObject' as const),
      session,
      fileName: fc.constantFrom(null, 'notes.txt', 'bad"name;.bin', ''),
      mediaType: fc.constantFrom('text/plain', 'image/png', 'not a type'),
      // A few byte strings, so two sessions often share a blob.
      bytes: fc.constantFrom<readonly number[]>([], [104, 105], [0, 255, 0]),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('object' as const), session, pending: fc.integer({ min: 1, max: 6 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('complete' as const),
      session,
      skew,
      objectId: fc.oneof({ arbitrary: objectId, weight: 4 }, { arbitrary: fc.constant(null), weight: 1 }),
      nested: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('recordCompletion' as const), objectId, session: fc.option(session, { nil: null }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('compact' as const),
      stream: fc.oneof({ arbitrary: session, weight: 4 }, { arbitrary: fc.constant('catalog' as const), weight: 1 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'reopen' as const }) },
);

/** Every run begins with these, so most random calls meet a live session (s2 is left to the random starts). */
export const PREAMBLE: readonly Call[] = [
  { op: 'start', session: 0, sessionType: 'conversation', invalid: null },
  { op: 'start', session: 1, sessionType: 'free-time', invalid: null },
];
