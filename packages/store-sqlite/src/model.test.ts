import { randomUUID } from 'node:crypto';
import { memoryStore, type EventStore, type ExpectedRevision, type JsonValue, type NewEvent } from '@sessionfold/core/kernel';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { PROPERTY_RUNS, collect, freshPath } from './test-support.fixture.js';

type Expectation = 'right' | 'wrong' | 'any' | 'no_stream';
type Op =
  | { op: 'append'; stream: number; events: { type: string; data: JsonValue; eventId?: string }[]; expected: Expectation }
  | { op: 'read'; stream: number; from?: number }
  | { op: 'readAll'; from?: number }
  | { op: 'streams'; prefix: number }
  | { op: 'compact'; stream: number; back: number }
  | { op: 'restore'; stream: number; revision: number }
  | { op: 'delete'; stream: number; expected: Expectation }
  | { op: 'putBlob'; stream: number; bytes: number[] }
  | { op: 'getBlob'; bytes: number[] }
  | { op: 'blobs'; stream: number }
  | { op: 'reopen' };

const stream = fc.integer({ min: 0, max: 3 });
const expectation = fc.constantFrom<Expectation>('right', 'right', 'right', 'wrong', 'any', 'no_stream');
const newEvent = fc.record(
  {
    type: fc.constantFrom('Opened', 'Noted', 'Closed'),
    data: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>,
    eventId: fc.constantFrom('e1', 'e2', 'e3', 'e4'),
  },
  { requiredKeys: ['type', 'data'] },
);
const bytes = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 0, maxLength: 3 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({ op: fc.constant('append' as const), stream, events: fc.array(newEvent, { minLength: 1, maxLength: 3 }), expected: expectation }),
    weight: 6,
  },
  { arbitrary: fc.record({ op: fc.constant('read' as const), stream, from: fc.integer({ min: 1, max: 6 }) }, { requiredKeys: ['op', 'stream'] }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('readAll' as const), from: fc.integer({ min: 1, max: 12 }) }, { requiredKeys: ['op'] }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('streams' as const), prefix: fc.integer({ min: 0, max: 2 }) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('compact' as const), stream, back: fc.integer({ min: -1, max: 2 }) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('restore' as const), stream, revision: fc.integer({ min: 1, max: 4 }) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('delete' as const), stream, expected: expectation }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('putBlob' as const), stream, bytes }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('getBlob' as const), bytes }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('blobs' as const), stream }), weight: 1 },
  { arbitrary: fc.constant({ op: 'reopen' as const }), weight: 1 },
);

/** What a call returned, or the code and text of the error it threw: the thing both stores must agree on. */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    return { value: await call() };
  } catch (error) {
    const { code, message, name } = error as { code?: string; message: string; name: string };
    return { error: `${name} ${code ?? ''} ${message}` };
  }
}

async function apply(store: EventStore, step: Op, names: readonly string[], head: number): Promise<unknown> {
  const name = (index: number) => names[index] as string;
  const expected = (kind: Expectation): ExpectedRevision => (kind === 'right' ? head : kind === 'wrong' ? head + 1 : kind);
  const sha = async (content: number[]) => {
    const { createHash } = await import('node:crypto');
    return createHash('sha256').update(Uint8Array.from(content)).digest('hex');
  };
  switch (step.op) {
    case 'append':
      return outcome(() => store.append(name(step.stream), step.events as NewEvent[], { expectedRevision: expected(step.expected) }));
    case 'read':
      return outcome(async () => {
        const read = await store.read(name(step.stream), step.from === undefined ? {} : { fromRevision: step.from });
        return { ...read, events: await collect(read.events) };
      });
    case 'readAll':
      return outcome(() => collect(store.readAll(step.from === undefined ? {} : { fromPosition: step.from })));
    case 'streams':
      return outcome(() => collect(store.streams({ prefix: step.prefix === 0 ? '' : name(step.prefix).slice(0, -1) })));
    case 'compact': {
      const revision = Math.max(1, head - step.back);
      const snapshot = { revision, state: { folded: revision }, identity: { stream: name(step.stream), schemaVersion: 1 } };
      return outcome(() => store.compact(name(step.stream), snapshot));
    }
    case 'restore': {
      const snapshot = { revision: step.revision, state: { restored: step.revision }, identity: { stream: name(step.stream), schemaVersion: 1 } };
      return outcome(() => store.restoreStream(name(step.stream), snapshot));
    }
    case 'delete':
      return outcome(() => store.deleteStream(name(step.stream), { expectedRevision: expected(step.expected) }));
    case 'putBlob':
      return outcome(() => store.putBlob(name(step.stream), Uint8Array.from(step.bytes)));
    case 'getBlob':
      return outcome(async () => store.getBlob(await sha(step.bytes)));
    case 'blobs':
      return outcome(() => collect(store.blobs(name(step.stream))));
    case 'reopen':
      return { value: 'reopened' };
  }
}

describe('sqliteStore against the memory store', () => {
  it('answers every sequence of calls exactly as the reference store does, positions and error texts included', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
        const run = randomUUID().slice(0, 8);
        const names = [`${run}-a`, `${run}-a.b`, `${run}-a.c`, `${run}-b`];
        const clock = () => new Date(Date.UTC(2026, 0, 1));
        const path = freshPath();
        const reference = memoryStore({ clock });
        let store = await sqliteStore({ path, clock });
        try {
          for (const step of ops) {
            const head = 'stream' in step ? (await reference.read(names[step.stream] as string)).revision : 0;
            if (step.op === 'reopen') {
              await store.close();
              store = await sqliteStore({ path, clock });
            }
            const expected = await apply(reference, step, names, head);
            const actual = await apply(store, step, names, head);
            expect(actual, JSON.stringify(step)).toEqual(expected);
          }
        } finally {
          await store.close();
        }
      }),
      { numRuns: PROPERTY_RUNS * 4 },
    );
  });
});
