import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { copyStore } from '@sessionfold/core';
import { describeCall, type Call } from './calls.js';
import { callArbitrary, propertyParameters, PREAMBLE } from './calls.fixture.js';
import { SessionRunner } from './runner.js';
import { STORE_KINDS } from './subjects.js';

/** A call that prints as its description in a counterexample. */
const readableCall: fc.Arbitrary<Call> = callArbitrary.map((call) => Object.assign(call, { [fc.toStringMethod]: () => describeCall(call) }));

describe('copying a store into another', () => {
  it('gives every pair of stores identical sessions, and copying again changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(readableCall, { maxLength: 30, size: 'max' }), async (calls) => {
        for (const fromKind of STORE_KINDS) {
          const source = await SessionRunner.open(fromKind.subject());
          try {
            for (const call of [...PREAMBLE, ...calls]) await source.perform(call);
            const expectedService = await source.serviceView();
            const { folds, blobs, streams } = await source.storeView();

            for (const toKind of STORE_KINDS) {
              const target = await SessionRunner.open(toKind.subject());
              const pair = `${fromKind.name} → ${toKind.name}`;
              try {
                const first = await copyStore(source.store, target.store);
                target.followSessionsOf(source);
                expect(first.streams, `${pair}: streams copied`).toBe(streams.length);
                await target.reopen();
                const copied = await target.storeView();
                expect({ streams: copied.streams, folds: copied.folds, blobs: copied.blobs }, `${pair}: streams, folded states and blobs`).toEqual({
                  streams,
                  folds,
                  blobs,
                });
                expect(await target.serviceView(), `${pair}: list(), commandHeads() and get()`).toEqual(expectedService);

                const second = await copyStore(source.store, target.store);
                expect({ events: second.events, unchanged: second.unchanged }, `${pair}: a second copy`).toEqual({ events: 0, unchanged: streams.length });
                expect(await target.storeView(), `${pair}: the destination after a second copy`).toEqual(copied);
              } finally {
                await target.dispose();
              }
            }
          } finally {
            await source.dispose();
          }
        }
      }),
      propertyParameters(12),
    );
  });
});
