import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeCall, type Call } from './calls.js';
import { callArbitrary, commandsConstraints, propertyParameters, PREAMBLE } from './calls.fixture.js';
import { SessionRunner, type Step } from './runner.js';
import { STORE_KINDS } from './subjects.js';

/** The same service on every store, each with its own data, clock and ids. */
interface Stores {
  runners: SessionRunner[];
}

/** What must agree between stores for one call (the causes under an error are store-specific). */
const comparable = (step: Step) => ({ call: step.call, expectedVersion: step.expectedVersion, outcome: step.outcome });

/** Asserts every store's value equals the reference store's (the first), naming the store that differs. */
function expectSame<T>(what: string, runners: readonly SessionRunner[], values: readonly T[]): void {
  const [reference, ...others] = values;
  others.forEach((value, index) => {
    expect(value, `${what}: ${runners[index + 1]?.subject.name} differs from ${runners[0]?.subject.name}`).toEqual(reference);
  });
}

/** One call, run on every store; the answers must be identical. */
class CallOnEveryStore implements fc.AsyncCommand<object, Stores> {
  constructor(readonly call: Call) {}

  check(): boolean {
    return true;
  }

  async run(_model: object, stores: Stores): Promise<void> {
    const steps = await Promise.all(stores.runners.map((runner) => runner.perform(this.call)));
    steps.forEach((step, index) => {
      const outcome = step.outcome;
      if ('error' in outcome && (outcome.error.code === 'internal_error' || outcome.error.code === null)) {
        throw new Error(`${step.call} failed on ${stores.runners[index]?.subject.name}: ${outcome.error.name}: ${outcome.error.message} (${step.cause ?? 'no cause'})`);
      }
    });
    expectSame(this.toString(), stores.runners, steps.map(comparable));
    expectSame(`${this.toString()}: the changes it committed`, stores.runners, await Promise.all(stores.runners.map((runner) => runner.newChanges())));
  }

  toString(): string {
    return describeCall(this.call);
  }
}


async function openStores(): Promise<Stores> {
  const runners: SessionRunner[] = [];
  try {
    for (const kind of STORE_KINDS) runners.push(await SessionRunner.open(kind.subject()));
  } catch (error) {
    await Promise.all(runners.map((runner) => runner.dispose()));
    throw error;
  }
  return { runners };
}

describe('the session service on every store', () => {
  it('answers every call of a random sequence (after starting s0 and s1) identically and leaves identical data behind', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands([callArbitrary.map((call) => new CallOnEveryStore(call))], commandsConstraints(40)), async (commands) => {
        const stores = await openStores();
        const { runners } = stores;
        try {
          for (const call of PREAMBLE) await new CallOnEveryStore(call).run({}, stores);
          await fc.asyncModelRun(() => ({ model: {}, real: stores }), commands);

          const before = await Promise.all(runners.map((runner) => runner.serviceView()));
          await Promise.all(runners.map((runner) => runner.reopen()));
          const after = await Promise.all(runners.map((runner) => runner.serviceView()));
          runners.forEach((runner, index) => expect(after[index], `${runner.subject.name}: the service answers differently after reopening`).toEqual(before[index]));
          expectSame('list(), commandHeads() and get() after reopening', runners, after);
          expectSame('streams, folded states, blobs and change feed', runners, await Promise.all(runners.map((runner) => runner.storeView())));
        } finally {
          await Promise.all(runners.map((runner) => runner.dispose()));
        }
      }),
      propertyParameters(25),
    );
  });
});
