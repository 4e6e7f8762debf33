import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openSessionHistory, type CompactionObservation, type CompactionPolicy, type EventStore, type SessionHistory } from '@sessionfold/core';
import { callArbitrary, PREAMBLE, propertyParameters } from './calls.fixture.js';
import { expectSame } from './equivalence.fixture.js';
import { SessionRunner, steppingClock, type Step } from './runner.js';
import { fileKind, memoryKind, sqliteKind, STORE_KINDS, type StoreKind } from './subjects.js';

/** The service's own compaction: never, after every call that writes (to the head), or at thresholds drawn per run. */
const policies = (random: CompactionPolicy): [StoreKind, CompactionPolicy | false][] => [
  [memoryKind, false],
  [memoryKind, { everyEvents: 0, keepEvents: 0 }],
  [memoryKind, random],
  [fileKind, { everyEvents: 0, keepEvents: 0 }],
  [sqliteKind, random],
];

const randomPolicy: fc.Arbitrary<CompactionPolicy> = fc.record({ everyEvents: fc.nat(4), keepEvents: fc.nat(3) });

const answer = (step: Step) => ({ call: step.call, expectedVersion: step.expectedVersion, commandId: step.commandId, outcome: step.outcome });

describe('compaction on its own', () => {
  it('changes no answer: a random sequence of calls answers the same with compaction at every step, at random steps and never', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(callArbitrary, { maxLength: 30 }), randomPolicy, async (calls, random) => {
        const runners: SessionRunner[] = [];
        try {
          for (const [kind, compaction] of policies(random)) runners.push(await SessionRunner.open(kind.subject(), { compaction }));
          for (const call of [...PREAMBLE, ...calls]) {
            const steps = await Promise.all(runners.map((runner) => runner.perform(call)));
            expectSame(steps[0]?.call ?? '', runners, steps.map(answer));
          }
          await Promise.all(runners.map((runner) => runner.reopen()));
          expectSame('list(), commandHeads() and get() after reopening', runners, await Promise.all(runners.map((runner) => runner.serviceView())));
          const stored = await Promise.all(runners.map(async (runner) => ({ ...(await runner.storeView()), feed: undefined })));
          expectSame('streams, folded states and blobs', runners, stored);
          // Compaction did happen where it was asked for at every step.
          const compacted = stored[1]?.streams.filter((stream) => stream.stream.startsWith('session-')) ?? [];
          for (const { stream, revision } of compacted) {
            const read = await runners[1]?.store.read(stream);
            expect(read?.snapshot?.revision, `${stream} compacted to its head`).toBe(revision);
          }
        } finally {
          await Promise.all(runners.map((runner) => runner.dispose()));
        }
      }),
      propertyParameters(25),
    );
  });
});

const START = { startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' };

/** `sessions` sessions of `lines` transcript lines each, written with compaction off; their ids. */
async function longSessions(history: SessionHistory, sessions: number, lines: number): Promise<string[]> {
  const ids: string[] = [];
  for (let session = 0; session < sessions; session++) {
    const { value } = await history.start({ idempotencyId: `long-${session}`, ...START });
    for (let line = 0; line < lines; line++) await history.appendTranscript(value.id, { role: 'user-message', text: `${session}.${line}` });
    ids.push(value.id);
  }
  return ids;
}

/** The revision of each stream's snapshot (0: none) and its head. */
async function snapshots(store: EventStore, ids: readonly string[]): Promise<{ snapshot: number; revision: number }[]> {
  return Promise.all(
    ids.map(async (id) => {
      const read = await store.read(`session-${id}`);
      for await (const _ of read.events) break;
      return { snapshot: read.snapshot?.revision ?? 0, revision: read.revision };
    }),
  );
}

const DURABLE_KINDS = STORE_KINDS.filter((kind) => kind.subject().durable);

describe.each(DURABLE_KINDS.map((kind) => [kind.name, kind] as const))('compaction at open on the %s store', (_name, kind) => {
  it('a long stream written with compaction off and never written again ends compacted after a reopen with it on', async () => {
    const subject = kind.subject();
    let store = await subject.open();
    try {
      const writer = await openSessionHistory({ store, clock: steppingClock(), compaction: false });
      const [id = ''] = await longSessions(writer, 1, 40);
      const before = await writer.get(id);
      await writer.close();
      store = await subject.reopen(store);
      expect(await snapshots(store, [id])).toEqual([{ snapshot: 0, revision: 41 }]);

      let compacted!: (done: CompactionObservation) => void;
      const done = new Promise<CompactionObservation>((resolve) => (compacted = resolve));
      const history = await openSessionHistory({
        store,
        clock: steppingClock(),
        compaction: { everyEvents: 20, keepEvents: 5 },
        observer: { compaction: compacted },
      });
      expect(await done).toMatchObject({ stream: `session-${id}`, revision: 36, droppedEvents: 36 });
      expect(await history.get(id)).toEqual(before);
      await history.close();
      store = await subject.reopen(store);
      expect(await snapshots(store, [id])).toEqual([{ snapshot: 36, revision: 41 }]);
      const reopened = await openSessionHistory({ store, clock: steppingClock(), compaction: false });
      expect(await reopened.get(id)).toEqual(before);
      await reopened.close();
    } finally {
      await subject.dispose(store);
    }
  });

  it('closing the service while the open compacts leaves every stream whole, compacted or not', async () => {
    const subject = kind.subject();
    let store = await subject.open();
    try {
      const writer = await openSessionHistory({ store, clock: steppingClock(), compaction: false });
      const ids = await longSessions(writer, 8, 12);
      const before = await Promise.all(ids.map((id) => writer.get(id)));
      await writer.close();

      let compacted!: () => void;
      const first = new Promise<void>((resolve) => (compacted = resolve));
      const history = await openSessionHistory({
        store,
        clock: steppingClock(),
        compaction: { everyEvents: 4, keepEvents: 2 },
        observer: { compaction: () => compacted() },
      });
      await first;
      await history.close();
      store = await subject.reopen(store);
      const after = await snapshots(store, ids);
      expect(after.filter((stream) => stream.snapshot === 11).length).toBeGreaterThanOrEqual(1);
      expect(after.filter((stream) => stream.snapshot !== 0 && stream.snapshot !== 11)).toEqual([]);
      const reopened = await openSessionHistory({ store, clock: steppingClock(), compaction: false });
      expect(await Promise.all(ids.map((id) => reopened.get(id)))).toEqual(before);
      await reopened.close();
    } finally {
      await subject.dispose(store);
    }
  });
});
