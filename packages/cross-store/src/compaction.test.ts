import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CompactionPolicy } from '@sessionfold/core';
import { callArbitrary, PREAMBLE, propertyParameters } from './calls.fixture.js';
import { expectSame } from './equivalence.fixture.js';
import { SessionRunner, type Step } from './runner.js';
import { fileKind, memoryKind, sqliteKind, type StoreKind } from './subjects.js';

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
