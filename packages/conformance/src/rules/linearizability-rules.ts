import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConcurrencyError, type EventStore, type ExpectedRevision } from '@sessionfold/core/kernel';
import { readFeed, readStream, skipWithout, streamId, type SuiteContext } from '../support.js';

/** One client's call: an append expecting what the client last saw (or any), a read of the stream, or a read of the feed. */
type Call = { kind: 'append'; events: number; guess: 'seen' | 'any' | 'stale' } | { kind: 'read' } | { kind: 'feed' };

const callArbitrary: fc.Arbitrary<Call> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      events: fc.integer({ min: 1, max: 3 }),
      guess: fc.constantFrom('seen' as const, 'any' as const, 'stale' as const),
    }),
  },
  { weight: 2, arbitrary: fc.constant<Call>({ kind: 'read' }) },
  { weight: 1, arbitrary: fc.constant<Call>({ kind: 'feed' }) },
);

/** Several clients, each a few calls made one after another; the clients run at once. */
const clientsArbitrary = fc.array(fc.array(callArbitrary, { minLength: 1, maxLength: 6 }), { minLength: 2, maxLength: 5 });

/**
 * What a history of one stream must show if the store is linearizable per stream: the stream's revision only
 * grows, so whatever any call learned of it when it returned (a read's revision, an append's revision, the
 * revision a `ConcurrencyError` names) is a floor for every call that starts after that. A refusal naming a
 * revision no read can see yet, or an acknowledged append a later read does not show, breaks it.
 */
async function runClients(store: EventStore, clients: Call[][]): Promise<void> {
  const s = streamId('linear');
  let floor = 0;
  let batch = 0;
  const committed: Array<{ revision: number; events: number; tag: string }> = [];
  const learned = (revision: number) => {
    floor = Math.max(floor, revision);
  };
  const client = async (calls: Call[], id: number) => {
    let seen = 0;
    for (const call of calls) {
      const atStart = floor;
      if (call.kind === 'read') {
        const read = await store.read(s);
        expect(read.revision, `a read started after revision ${atStart} was known`).toBeGreaterThanOrEqual(atStart);
        seen = read.revision;
        learned(read.revision);
      } else if (call.kind === 'feed') {
        const mine = (await readFeed(store)).filter((record) => record.streamId === s);
        const revision = mine.at(-1)?.revision ?? 0;
        expect(revision, `the feed read after revision ${atStart} was known`).toBeGreaterThanOrEqual(atStart);
        seen = revision;
        learned(revision);
      } else {
        const tag = `c${id}-b${batch++}`;
        const expected: ExpectedRevision = call.guess === 'any' ? 'any' : call.guess === 'stale' ? Math.max(0, seen - 1) : seen;
        const events = Array.from({ length: call.events }, (_, n) => ({ type: 'Step', data: { tag, n } }));
        try {
          const result = await store.append(s, events, { expectedRevision: expected });
          expect(result.revision, `an append started after revision ${atStart} was known`).toBeGreaterThanOrEqual(atStart + call.events);
          committed.push({ revision: result.revision, events: call.events, tag });
          seen = result.revision;
          learned(result.revision);
        } catch (error) {
          if (!(error instanceof ConcurrencyError)) throw error;
          expect(error.actual, `a conflict decided after revision ${atStart} was known`).toBeGreaterThanOrEqual(atStart);
          seen = error.actual;
          learned(error.actual);
        }
      }
    }
  };
  await Promise.all(clients.map((calls, id) => client(calls, id)));
  // The model: the acknowledged batches, whole and in revision order, are the stream; nothing else is.
  committed.sort((a, b) => a.revision - b.revision);
  const read = await readStream(store, s);
  const expectedEvents = committed.flatMap(({ revision, events, tag }) =>
    Array.from({ length: events }, (_, n) => ({ revision: revision - events + 1 + n, data: { tag, n } })),
  );
  expect(read.events.map((event) => ({ revision: event.revision, data: event.data }))).toEqual(expectedEvents);
  expect(read.revision).toBe(expectedEvents.length);
}

/** Concurrent clients of one stream see one history: a refusal or an acknowledgement is never contradicted by a later read. */
export function describeLinearizabilityRules(ctx: SuiteContext): void {
  describe('linearizable per stream', () => {
    it('after a ConcurrencyError naming revision N (or an append acknowledged at N), a read started later sees N or more [capability: concurrentAppends]', async (t) => {
      skipWithout(t, !ctx.caps.concurrentAppends, 'needs capabilities.concurrentAppends');
      const { store } = await ctx.fresh();
      await fc.assert(
        fc.asyncProperty(clientsArbitrary, (clients) => runClients(store, clients)),
        {
          numRuns: Math.max(10, ctx.caps.numRuns),
          ...(ctx.caps.replay.seed === undefined ? {} : { seed: ctx.caps.replay.seed }),
          ...(ctx.caps.replay.path === undefined ? {} : { path: ctx.caps.replay.path }),
        },
      );
    }, 60_000);

    it('a refusal while an append to the stream is in flight names a revision a read then sees [capability: concurrentAppends]', async (t) => {
      skipWithout(t, !ctx.caps.concurrentAppends, 'needs capabilities.concurrentAppends');
      const { store } = await ctx.fresh();
      const s = streamId('linear');
      // The refused append is awaited alone: the other may still be in flight when the read starts.
      const first = store.append(s, [{ type: 'First', data: null }], { expectedRevision: 'no_stream' });
      first.catch(() => undefined);
      const outcome = await store.append(s, [{ type: 'Second', data: null }], { expectedRevision: 'no_stream' }).then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      );
      if ('error' in outcome) {
        expect(outcome.error).toBeInstanceOf(ConcurrencyError);
        const { actual } = outcome.error as ConcurrencyError;
        expect(actual).toBe(1);
        expect((await store.read(s)).revision, 'a read after the refusal').toBeGreaterThanOrEqual(actual);
        await first;
      } else {
        expect((await store.read(s)).revision).toBeGreaterThanOrEqual(outcome.result.revision);
        await expect(first).rejects.toBeInstanceOf(ConcurrencyError);
      }
    });
  });
}
