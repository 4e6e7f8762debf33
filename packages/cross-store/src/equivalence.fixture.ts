import fc from 'fast-check';
import { expect } from 'vitest';
import { describeCall, type Call } from './calls.js';
import { ARCHIVE_POLICIES, callArbitrary, commandsConstraints, PREAMBLE } from './calls.fixture.js';
import { SessionRunner, type ServiceOptions, type Step } from './runner.js';
import type { StoreKind } from './subjects.js';

/** The error codes a service call may answer with; anything else (storage, corruption, a foreign error) is a failure. */
const SERVICE_ANSWERS = new Set(['invalid_request', 'not_found', 'state_conflict']);

/** The same service on several stores, each with its own data, clock and ids; the first is the reference. */
interface Stores {
  runners: SessionRunner[];
}

/** What must agree between stores for one call (the causes under an error are store-specific). */
const comparable = (step: Step) => ({ call: step.call, expectedVersion: step.expectedVersion, commandId: step.commandId, outcome: step.outcome });

/** Asserts every store's value equals the reference store's (the first), naming the store that differs. */
export function expectSame<T>(what: string, runners: readonly SessionRunner[], values: readonly T[]): void {
  const [reference, ...others] = values;
  others.forEach((value, index) => {
    expect(value, `${what}: ${runners[index + 1]?.subject.name} differs from ${runners[0]?.subject.name}`).toEqual(reference);
  });
}

/** One call, run on every store: the answers, and the changes each store committed for it, must be identical. */
class CallOnEveryStore implements fc.AsyncCommand<object, Stores> {
  constructor(readonly call: Call) {}

  check(): boolean {
    return true;
  }

  async run(_model: object, stores: Stores): Promise<void> {
    await this.runOn(stores);
  }

  /** Runs the call on every store, checks the answers agree, and resolves with the reference store's step. */
  async runOn(stores: Stores): Promise<Step> {
    const steps = await Promise.all(stores.runners.map((runner) => runner.perform(this.call)));
    steps.forEach((step, index) => {
      const outcome = step.outcome;
      // A storage failure or a foreign error is never an answer the service should give, on any store.
      if ('error' in outcome && !SERVICE_ANSWERS.has(outcome.error.code ?? '')) {
        throw new Error(
          `${step.call} failed on ${stores.runners[index]?.subject.name}: ${outcome.error.name}: ${outcome.error.message} (${step.cause ?? 'no cause'})`,
        );
      }
    });
    expectSame(this.toString(), stores.runners, steps.map(comparable));
    expectSame(`${this.toString()}: the changes it committed`, stores.runners, await Promise.all(stores.runners.map((runner) => runner.newChanges())));
    return steps[0] as Step;
  }

  toString(): string {
    return describeCall(this.call);
  }
}

async function openStores(kinds: readonly StoreKind[], options: readonly ServiceOptions[]): Promise<Stores> {
  const runners: SessionRunner[] = [];
  try {
    for (const [index, kind] of kinds.entries()) runners.push(await SessionRunner.open(kind.subject(), { ...ARCHIVE_POLICIES, ...options[index] }));
  } catch (error) {
    await Promise.all(runners.map((runner) => runner.dispose()));
    throw error;
  }
  return { runners };
}

/** Runs `body` on fresh stores of every kind, then checks what they hold at the end, and removes them. */
async function onFreshStores(kinds: readonly StoreKind[], body: (stores: Stores) => Promise<void>, options: readonly ServiceOptions[] = []): Promise<void> {
  const stores = await openStores(kinds, options);
  const { runners } = stores;
  try {
    for (const call of PREAMBLE) await new CallOnEveryStore(call).runOn(stores);
    await body(stores);

    const before = await Promise.all(runners.map((runner) => runner.serviceView()));
    await Promise.all(runners.map((runner) => runner.reopen()));
    const after = await Promise.all(runners.map((runner) => runner.serviceView()));
    runners.forEach((runner, index) => expect(after[index], `${runner.subject.name}: the service answers differently after reopening`).toEqual(before[index]));
    expectSame('list(), commandHeads() and get() after reopening', runners, after);
    expectSame('streams, folded states, blobs and change feed', runners, await Promise.all(runners.map((runner) => runner.storeView())));
  } finally {
    await Promise.all(runners.map((runner) => runner.dispose()));
  }
}

/**
 * The equivalence property: after the preamble, a random sequence of calls runs on every store of `kinds`
 * (fresh ones per run), the service on the i-th opened with the archive policies and `options[i]` (default: none). Each call must answer
 * identically everywhere and commit the same changes; at the end, after reopening, the service must answer as
 * before and the stores must hold the same streams, folded states, blobs and change feed.
 */
export function equivalenceProperty(kinds: readonly StoreKind[], maxCommands = 40, options: readonly ServiceOptions[] = []) {
  return fc.asyncProperty(fc.commands([callArbitrary.map((call) => new CallOnEveryStore(call))], commandsConstraints(maxCommands)), (commands) =>
    onFreshStores(kinds, (stores) => fc.asyncModelRun(() => ({ model: {}, real: stores }), commands), options),
  );
}

/**
 * The same checks for one fixed script of calls (run after the preamble); resolves with the steps, as every store took
 * them. The services run under the archive policies unless `options` says otherwise.
 */
export async function checkScript(kinds: readonly StoreKind[], calls: readonly Call[], options: ServiceOptions = {}): Promise<Step[]> {
  const steps: Step[] = [];
  await onFreshStores(
    kinds,
    async (stores) => {
      for (const call of calls) steps.push(await new CallOnEveryStore(call).runOn(stores));
    },
    kinds.map(() => options),
  );
  return steps;
}
