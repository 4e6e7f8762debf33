import { compactStream } from '@sessionfold/core';
import { benchReducer } from '../fixtures.js';
import { fillStream, withStore, type Scenario } from '../scenario.js';
import { perSecond } from '../stats.js';

/** Folds a long stream and compacts it to a snapshot (`compactStream`). Raw: fold + a durable snapshot line / snapshot row + dropping the events. */
export const compaction: Scenario = {
  id: 'compaction',
  title: 'compact 1 stream',
  unit: 'events/s',
  requires: ['compact'],
  rawOperation: 'compact',
  async run(context, subject) {
    const { compactionEvents, fillBatch } = context.volumes;
    const raw = await context.raw.measure(subject.raw, 'compaction', async (family) => family.compact(await context.dir('raw-compaction'), compactionEvents));
    return withStore(subject, await context.dir('compaction'), async (store) => {
      await fillStream(store, 'compacted', compactionEvents, fillBatch);
      const start = performance.now();
      const revision = await compactStream(store, 'compacted', benchReducer);
      const ms = performance.now() - start;
      return {
        rate: perSecond(compactionEvents, ms),
        latency: { count: 1, p50Ms: ms, p99Ms: ms },
        rawRate: perSecond(compactionEvents, raw.ms),
        ...(revision === compactionEvents ? {} : { note: `compacted to revision ${revision}` }),
      };
    });
  },
};
