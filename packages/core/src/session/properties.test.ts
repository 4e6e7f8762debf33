import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compactStream, foldStream } from '../kernel/fold.js';
import { memoryStore, type EventStore } from '../kernel/index.js';
import { readJson, type JsonValue } from '../kernel/json.js';
import { SessionHistoryError } from './errors.js';
import { sessionEvent, type SessionEvent } from './events.js';
import { START_KEY_STREAM_PREFIX, sessionIdForStart, sessionStream } from './ids.js';
import { LOG_ROLES, RETAINED_INGRESS_FAILURES, type SessionCommand } from './model.js';
import { catalogReducer, sessionReducer } from './reducer.js';
import type { SessionHistory } from './service.js';
import { openTestHistory, streamNames } from './test-support.fixture.js';

/** `SESSIONFOLD_PROPERTY_RUNS` when set (a long run is one variable away), else `fallback`. */
const propertyRuns = (fallback: number): number => Number(process.env['SESSIONFOLD_PROPERTY_RUNS'] ?? fallback);

const SESSION = '9078bb6e-0931-4477-9ce9-b1430d0335a2';
const STREAM = sessionStream(SESSION);

const at = fc.constantFrom('2026-07-23T00:00:00.000Z', '2026-07-23T00:00:01.000Z', '2026-07-23T00:00:02.500Z');
const state = fc.dictionary(fc.constantFrom('sessionType', 'pendingTurn', 'channel'), fc.oneof(fc.boolean(), fc.string({ maxLength: 4 })), { maxKeys: 3 });
const commandId = fc.constantFrom('c1', 'c2', 'c3');
const nullableAt = fc.option(at, { nil: null });
// JSON as stored: fast-check likes `__proto__` keys, which no well-formed event carries (inputs refuse them).
const outcome = fc
  .jsonValue({ maxDepth: 1 })
  .map((value) => JSON.parse(JSON.stringify(value)) as JsonValue)
  .filter((value) => readJson(value, { refuseProtoKeys: true }).problem === undefined);
const receipt = fc.record({
  transactionId: fc.option(fc.string({ maxLength: 4 }), { nil: null }),
  sessionObjectId: fc.constantFrom('A', 'B'),
  sessionId: fc.constant(null),
  sessionType: fc.constant(null),
  createdAt: nullableAt,
  committedAt: nullableAt,
  nodeIds: fc.constant({}),
  objectIds: fc.constant({}),
});

/** Any well-formed session event, with ids drawn from small sets so events meet each other. */
const anyEvent: fc.Arbitrary<SessionEvent> = fc.oneof(
  fc.record({ at, startedAt: at, state }).map((data) => sessionEvent('SessionStarted', data)),
  fc.record({ at, startedAt: at, state }).map((data) => sessionEvent('SessionRegistered', data)),
  fc.record({ at, state, userActivity: fc.boolean() }).map((data) => sessionEvent('SessionCheckpointed', data)),
  fc
    .record({ at, state: fc.option(state, { nil: undefined }), provenanceId: fc.option(fc.constant('p'), { nil: null }), nextAttemptAt: nullableAt })
    .map(({ state: s, ...data }) => sessionEvent('IngressRequested', s === undefined ? data : { ...data, state: s })),
  fc.record({ at, provenanceId: fc.constant('p') }).map((data) => sessionEvent('IngressStarted', data)),
  fc
    .record({
      at,
      attempt: fc.integer({ min: 1, max: 8 }),
      terminal: fc.boolean(),
      nextAttemptAt: nullableAt,
      retainedFailures: fc.integer({ min: 1, max: 6 }),
    })
    .map((data) =>
      sessionEvent('IngressFailed', {
        ...data,
        failure: { attempt: data.attempt, at: data.at, stage: 's', code: null, message: 'm', roundsUsed: null, contextTokens: null, contextWindowTokens: null },
      }),
    ),
  fc.record({ at, state }).map((data) => sessionEvent('IngressRetried', data)),
  fc.record({ at, resetFailureCount: fc.boolean(), retainedFailures: fc.integer({ min: 1, max: 6 }) }).map((data) => sessionEvent('IngressReleased', data)),
  fc.record({ at, state, receipt }).map((data) => sessionEvent('SessionCompleted', data)),
  fc
    .record({ id: commandId, sequence: fc.integer({ min: 1, max: 5 }), enqueueOrder: fc.nat(9), createdAt: at })
    .map(({ id, sequence, enqueueOrder, createdAt }) =>
      sessionEvent('CommandEnqueued', {
        command: {
          id,
          sessionId: SESSION,
          sequence,
          enqueueOrder,
          kind: 'message',
          payload: {},
          status: 'pending',
          cancelRequested: false,
          outcome: null,
          createdAt,
          processingStartedAt: null,
          completedAt: null,
          idempotencyId: id,
        },
      }),
    ),
  fc.record({ at, commandId }).map((data) => sessionEvent('CommandClaimed', data)),
  fc.record({ at, commandId, outcome: outcome }).map((data) => sessionEvent('CommandCompleted', data)),
  fc.record({ at, commandId }).map((data) => sessionEvent('CommandCancelRequested', data)),
  fc
    .record({ at, role: fc.constantFrom(...LOG_ROLES.filter((role) => role !== 'pending-object')), text: fc.string({ maxLength: 8 }) })
    .map((data) => sessionEvent('TranscriptAppended', data)),
  fc
    .record({ at, fileName: fc.string({ maxLength: 6 }), mediaType: fc.constantFrom('image/png', 'bad type'), size: fc.nat(9) })
    .map((data) => sessionEvent('ObjectStaged', { ...data, pendingId: 'pending:1', sha256: '0'.repeat(64) })),
);

async function appendEach(store: EventStore, events: readonly SessionEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i++) await store.append(STREAM, [events[i] as SessionEvent], { expectedRevision: i === 0 ? 'no_stream' : i });
}

describe('folding session streams', () => {
  it('folding events one at a time equals folding them all at once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyEvent, { minLength: 1, maxLength: 40 }), async (events) => {
        const batched = memoryStore();
        await batched.append(STREAM, events, { expectedRevision: 'no_stream' });
        const single = memoryStore();
        let incremental = sessionReducer.initial(STREAM);
        for (let i = 0; i < events.length; i++) {
          await single.append(STREAM, [events[i] as SessionEvent], { expectedRevision: i === 0 ? 'no_stream' : i });
          const read = await single.read(STREAM, { fromRevision: i + 1 });
          for await (const event of read.events) incremental = sessionReducer.apply(incremental, event);
        }
        const all = await foldStream(batched, STREAM, sessionReducer);
        expect(incremental).toEqual(all.state);
        expect((await foldStream(single, STREAM, sessionReducer)).state).toEqual(all.state);
      }),
      { numRuns: propertyRuns(100) },
    );
  });

  it('folding after a compaction equals folding before it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyEvent, { minLength: 1, maxLength: 40 }), fc.nat(), async (events, cut) => {
        const plain = memoryStore();
        await appendEach(plain, events);
        const compacted = memoryStore();
        const split = 1 + (cut % events.length);
        await appendEach(compacted, events.slice(0, split));
        await compactStream(compacted, STREAM, sessionReducer);
        for (let i = split; i < events.length; i++) await compacted.append(STREAM, [events[i] as SessionEvent], { expectedRevision: i });
        const before = await foldStream(plain, STREAM, sessionReducer);
        expect(await foldStream(compacted, STREAM, sessionReducer)).toEqual(before);
        await compactStream(plain, STREAM, sessionReducer);
        expect(await foldStream(plain, STREAM, sessionReducer)).toEqual(before);
      }),
      { numRuns: propertyRuns(100) },
    );
  });
});

type Op =
  | { kind: 'start'; s: number }
  | { kind: 'enqueue'; s: number; key: number }
  | { kind: 'claimHead' | 'completeHead' | 'release' }
  | { kind: 'checkpoint'; s: number; stale: boolean; userActivity: boolean }
  | { kind: 'requestIngress' | 'startIngress' | 'retryIngress' | 'stop' | 'stage' | 'completeIngress'; s: number }
  | { kind: 'failIngress' | 'failedAttempt'; s: number; tooLarge: boolean }
  | { kind: 'transcript'; s: number; role: 'user-message' | 'assistant-message' | 'system-error' }
  | { kind: 'complete'; s: number; object: string }
  | { kind: 'recordCompletion'; s: number; object: string };

const s = fc.integer({ min: 0, max: 2 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('start' as const), s }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('enqueue' as const), s, key: fc.integer({ min: 0, max: 3 }) }), weight: 3 },
  fc.record({ kind: fc.constantFrom('claimHead' as const, 'completeHead' as const, 'release' as const) }),
  fc.record({ kind: fc.constant('checkpoint' as const), s, stale: fc.boolean(), userActivity: fc.boolean() }),
  {
    arbitrary: fc.record({
      kind: fc.constantFrom(
        'requestIngress' as const,
        'startIngress' as const,
        'retryIngress' as const,
        'stop' as const,
        'stage' as const,
        'completeIngress' as const,
      ),
      s,
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      kind: fc.constantFrom('failIngress' as const, 'failedAttempt' as const),
      s,
      tooLarge: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    }),
    weight: 4,
  },
  fc.record({
    kind: fc.constant('transcript' as const),
    s,
    role: fc.constantFrom('user-message' as const, 'assistant-message' as const, 'system-error' as const),
  }),
  fc.record({ kind: fc.constantFrom('complete' as const, 'recordCompletion' as const), s, object: fc.constantFrom('O1', 'O2') }),
);

/** The id of the session key `k<index>` started last (its first incarnation's before any start). */
let liveIds = new Map<number, string>();
const idOf = (index: number) => liveIds.get(index) ?? sessionIdForStart(`k${index}`, 1);

/** Runs one step on `history`; refusals are expected, but only as typed errors other than internal_error. */
async function runStep(history: SessionHistory, step: Op): Promise<void> {
  const versionOf = async (id: string) => (await history.get(id).catch(() => undefined))?.version ?? 0;
  try {
    switch (step.kind) {
      case 'start':
        liveIds.set(step.s, (await history.start({ idempotencyId: `k${step.s}`, startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' })).value.id);
        break;
      case 'enqueue':
        await history.enqueue(idOf(step.s), { idempotencyId: `m${step.key}`, kind: 'message' });
        break;
      case 'claimHead':
      case 'completeHead': {
        const head = (await history.commandHeads())[0];
        if (!head) break;
        if (step.kind === 'claimHead') await history.claimCommand(head.id);
        else await history.completeCommand(head.id, { outcome: { ok: true } });
        break;
      }
      case 'release':
        await history.releaseInterruptedIngress();
        break;
      case 'checkpoint': {
        const version = await versionOf(idOf(step.s));
        await history.checkpoint(idOf(step.s), {
          expectedVersion: step.stale ? version - 1 : version,
          state: { pendingTurn: step.userActivity },
          userActivity: step.userActivity,
        });
        break;
      }
      case 'requestIngress':
        await history.requestIngress(idOf(step.s), { expectedVersion: await versionOf(idOf(step.s)), state: { sessionType: 'conversation' } });
        break;
      case 'startIngress':
        await history.startIngress(idOf(step.s), { expectedVersion: await versionOf(idOf(step.s)), provenanceId: 'p' });
        break;
      case 'retryIngress':
        await history.retryIngress(idOf(step.s), { expectedVersion: await versionOf(idOf(step.s)), state: {} });
        break;
      case 'completeIngress':
        await history.completeIngress(idOf(step.s), { expectedVersion: await versionOf(idOf(step.s)) });
        break;
      case 'stop':
        await history.stop(idOf(step.s));
        break;
      case 'stage':
        await history.stageObject(idOf(step.s), { fileName: 'f.bin', mediaType: 'application/x', bytes: new Uint8Array([step.s]) });
        break;
      case 'failIngress':
        await history.failIngress(idOf(step.s), {
          expectedVersion: await versionOf(idOf(step.s)),
          stage: 'loop',
          code: step.tooLarge ? 'input_too_large' : null,
          message: 'm',
        });
        break;
      case 'failedAttempt': {
        const id = idOf(step.s);
        await history.startIngress(id, { expectedVersion: await versionOf(id), provenanceId: 'p' });
        await history.failIngress(id, { expectedVersion: await versionOf(id), stage: 'loop', code: step.tooLarge ? 'input_too_large' : null, message: 'm' });
        break;
      }
      case 'transcript':
        await history.appendTranscript(idOf(step.s), { role: step.role, text: 'hello' });
        break;
      case 'complete':
        await history.complete(idOf(step.s), { expectedVersion: await versionOf(idOf(step.s)), state: { sessionObjectId: step.object } });
        break;
      case 'recordCompletion':
        await history.recordCompletion({ sessionObjectId: step.object, sessionId: idOf(step.s) });
        break;
    }
  } catch (error) {
    expect(error).toBeInstanceOf(SessionHistoryError);
    expect((error as SessionHistoryError).code).not.toBe('internal_error');
  }
}

/** Checks every stream of the store against the invariants; `lastVersion` carries versions between checks. */
async function checkInvariants(store: EventStore, history: SessionHistory, lastVersion: Map<string, number>, gone: Set<string>): Promise<void> {
  const names = (await streamNames(store)).filter((name) => !name.startsWith(START_KEY_STREAM_PREFIX));
  const expectedHeads: string[] = [];
  for (const name of names) {
    if (name === 'catalog') {
      const catalog = await foldStream(store, name, catalogReducer);
      expect(new Set(catalog.state.receipts.map((receipt) => receipt.sessionObjectId)).size).toBe(catalog.state.receipts.length);
      continue;
    }
    const { state } = await foldStream(store, name, sessionReducer);
    const open = state.commands.filter((command) => command.status !== 'complete').sort((a, b) => a.sequence - b.sequence);
    // A completed session's commands are no one's to run any more.
    if (open[0] && state.record?.phase !== 'complete') expectedHeads.push(open[0].id);
    expect(new Set(state.commands.map((command) => command.idempotencyId)).size).toBe(state.commands.length);
    const record = state.record;
    if (!record) continue;
    expect(record.version).toBeGreaterThanOrEqual(lastVersion.get(name) ?? 1);
    lastVersion.set(name, record.version);
    // The count itself may pass five (a new attempt can start from ingress_failed, as before); only
    // what is kept is bounded.
    expect(record.ingressFailures.length).toBeLessThanOrEqual(RETAINED_INGRESS_FAILURES);
  }
  // A session's id is never used again once its stream is gone.
  for (const name of names) expect(gone.has(name), `${name} came back`).toBe(false);
  for (const name of lastVersion.keys()) {
    if (names.includes(name)) continue;
    lastVersion.delete(name);
    gone.add(name);
  }
  const heads: SessionCommand[] = await history.commandHeads();
  expect(new Set(heads.map((head) => head.sessionId)).size).toBe(heads.length);
  expect(heads.map((head) => head.id).sort()).toEqual(expectedHeads.sort());
}

const STARTS: Op[] = [0, 1, 2].map((index) => ({ kind: 'start', s: index }));

describe('random sequences of service calls', () => {
  it('never store an event the reducer rejects nor break the record invariants, with two services taking turns', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 30 }), async (ops) => {
        // Two services on one store take turns, as two processes would.
        const { history: first, store } = await openTestHistory();
        const { history: second } = await openTestHistory({ store });
        const lastVersion = new Map<string, number>();
        const gone = new Set<string>();
        liveIds = new Map();
        for (const [index, step] of [...STARTS, ...ops].entries()) {
          const history = index % 2 === 0 ? first : second;
          await runStep(history, step);
          await checkInvariants(store, history, lastVersion, gone);
        }
        const { history: fresh } = await openTestHistory({ store });
        for (const running of [first, second]) {
          expect(await fresh.list()).toEqual(await running.list());
          expect(await fresh.commandHeads()).toEqual(await running.commandHeads());
        }
      }),
      { numRuns: propertyRuns(40) },
    );
  });

  it.each([
    ['', undefined],
    [', both compacting every stream they write at every step', { everyEvents: 0, keepEvents: 0 }],
  ] as const)('keep the invariants when two services run calls at the same time%s', async (_title, compaction) => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(op, op), { minLength: 3, maxLength: 15 }), async (pairs) => {
        const { history: first, store } = await openTestHistory(compaction ? { compaction } : {});
        const { history: second } = await openTestHistory(compaction ? { store, compaction } : { store });
        const lastVersion = new Map<string, number>();
        const gone = new Set<string>();
        liveIds = new Map();
        for (const step of STARTS) await runStep(first, step);
        for (const [a, b] of pairs) {
          await Promise.all([runStep(first, a), runStep(second, b)]);
          await checkInvariants(store, first, lastVersion, gone);
        }
        const { history: fresh } = await openTestHistory({ store });
        for (const running of [first, second]) {
          expect(await fresh.list()).toEqual(await running.list());
          expect(await fresh.commandHeads()).toEqual(await running.commandHeads());
        }
        await Promise.all([first.close(), second.close()]);
      }),
      { numRuns: propertyRuns(40) },
    );
  });
});
