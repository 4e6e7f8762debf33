import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStore } from '@sessionfold/core/kernel';
import { FeedConsumer } from '../feed-consumer.js';
import { listStreams, readFeed, type SuiteContext } from '../support.js';
import { commandArbitrary } from './arbitraries.js';
import { settle } from './outcome.js';
import { compareEverything, type ModelSide, type RealSide } from './sides.js';
import { REPLAY_PATH_VARIABLE } from '../property-env.js';

/** Random command sequences run against the store under test and `memoryStore()`, comparing every observation. */
export function describeModelRuns(ctx: SuiteContext): void {
  const { caps } = ctx;
  // Generous, so fast-check can report its shrunk counterexample before vitest gives up on the test.
  const timeout = 60_000 + caps.numRuns * 3_000;

  describe('model-based runs against memoryStore()', () => {
    it(
      `random command sequences agree with the reference model (${caps.numRuns} runs${caps.reopen ? ', with reopen' : ''})`,
      async () => {
        const property = fc.asyncProperty(commandArbitrary(caps), async (commands) => {
          const model: ModelSide = { store: memoryStore({ maxEventBytes: caps.maxEventBytes }), sent: [] };
          const real: RealSide = { store: await ctx.makeStore(), consumers: [new FeedConsumer(), new FeedConsumer()], reopen: caps.reopen };
          const run = await settle(async () => {
            expect(await listStreams(real.store), 'a new store lists no streams').toEqual([]);
            expect(await readFeed(real.store), 'a new store has an empty feed').toEqual([]);
            await fc.asyncModelRun(() => ({ model, real }), commands);
            await compareEverything(model, real, 'after the last command');
          });
          await model.store.close();
          const closed = await settle(() => real.store.close());
          if (!run.ok) throw run.error;
          if (!closed.ok) throw closed.error;
        });
        const details = await fc.check(property, {
          numRuns: caps.numRuns,
          includeErrorInReport: true,
          interruptAfterTimeLimit: timeout - 10_000,
          markInterruptAsFailure: true,
          ...(caps.replay.seed === undefined ? {} : { seed: caps.replay.seed }),
          ...(caps.replay.path === undefined ? {} : { path: caps.replay.path }),
        });
        if (details.failed) throw failureReport(details, await fc.asyncDefaultReportMessage(details));
      },
      timeout,
    );
  });
}

/** fast-check's report plus the environment variables that replay exactly the shrunk counterexample. */
function failureReport<T>(details: fc.RunDetails<T>, report: string | undefined): Error {
  const replayPath = /replayPath="([^"]*)"/.exec(report ?? '')?.[1];
  const replay = [`SESSIONFOLD_PROPERTY_SEED=${details.seed}`];
  if (details.counterexamplePath) replay.push(`SESSIONFOLD_PROPERTY_PATH=${details.counterexamplePath}`);
  if (replayPath) replay.push(`${REPLAY_PATH_VARIABLE}=${replayPath}`);
  return new Error(`${report ?? 'the property failed'}\nReplay it with: ${replay.join(' ')}`, { cause: details.errorInstance });
}
