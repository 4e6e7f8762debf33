import { benchEvent, benchEvents } from '../fixtures.js';
import { fillStream, withStore, type Scenario } from '../scenario.js';
import { perSecond, summarize, timeInFlight, timeSequential } from '../stats.js';

/** Durable appends of one event per call, one after another. Raw: one line + fdatasync / one-row transaction. */
export const appendSingle: Scenario = {
  id: 'append-1',
  title: 'append 1 event/call',
  unit: 'events/s',
  requires: [],
  rawOperation: 'appendBatches',
  async run(context, subject) {
    const n = context.volumes.singleAppends;
    const raw = await context.raw.measure(subject.raw, 'append-1', async (family) => family.appendBatches(await context.dir('raw-append-1'), 1, n));
    const timed = await withStore(subject, await context.dir('append-1'), async (store) => {
      let revision = await fillStream(store, 'single', 1, 1);
      return timeSequential(n, async (i) => {
        revision = (await store.append('single', [benchEvent(i)], { expectedRevision: revision })).revision;
      });
    });
    return { rate: perSecond(timed.ops, timed.ms), latency: summarize(timed.latencies), rawRate: perSecond(raw.ops, raw.ms) };
  },
};

/** Durable appends of `batchSize` (100) events per call. Raw: 100 lines per fdatasync / 100 rows per transaction. */
export const appendBatch: Scenario = {
  id: 'append-100',
  title: 'append 100 events/call',
  unit: 'events/s',
  requires: [],
  rawOperation: 'appendBatches',
  async run(context, subject) {
    const { batchCalls, batchSize } = context.volumes;
    const raw = await context.raw.measure(subject.raw, 'append-100', async (family) =>
      family.appendBatches(await context.dir('raw-append-100'), batchSize, batchCalls),
    );
    const timed = await withStore(subject, await context.dir('append-100'), async (store) => {
      let revision = await fillStream(store, 'batch', 1, 1);
      return timeSequential(batchCalls, async (i) => {
        revision = (await store.append('batch', benchEvents(i * batchSize, batchSize), { expectedRevision: revision })).revision;
      });
    });
    return {
      rate: perSecond(timed.ops * batchSize, timed.ms),
      latency: summarize(timed.latencies),
      rawRate: perSecond(raw.ops * batchSize, raw.ms),
    };
  },
};

/** 64 single-event appends in flight to one stream. Raw: one write + one fdatasync per 64 lines / 64 rows per transaction. */
export const appendInFlightOneStream: Scenario = {
  id: 'append-64-one-stream',
  title: '64 in flight, 1 stream',
  unit: 'events/s',
  requires: ['concurrentAppends'],
  rawOperation: 'appendBatches',
  async run(context, subject) {
    const { concurrentEvents, inFlight } = context.volumes;
    const rounds = Math.ceil(concurrentEvents / inFlight);
    const raw = await context.raw.measure(subject.raw, 'append-64-one', async (family) =>
      family.appendBatches(await context.dir('raw-append-64-one'), inFlight, rounds),
    );
    const timed = await withStore(subject, await context.dir('append-64-one'), async (store) => {
      await fillStream(store, 'shared', 1, 1);
      return timeInFlight(concurrentEvents, inFlight, (worker, call) =>
        store.append('shared', [benchEvent(call * inFlight + worker)], { expectedRevision: 'any' }),
      );
    });
    return {
      rate: perSecond(timed.ops, timed.ms),
      latency: summarize(timed.latencies),
      rawRate: perSecond(raw.ops * inFlight, raw.ms),
    };
  },
};

/** 64 single-event appends in flight, one per stream, to 64 streams. Raw: 64 files written then fdatasync'd in parallel / 64 rows per transaction. */
export const appendInFlightManyStreams: Scenario = {
  id: 'append-64-streams',
  title: '64 in flight, 64 streams',
  unit: 'events/s',
  requires: ['concurrentAppends'],
  rawOperation: 'appendSpread',
  async run(context, subject) {
    const { concurrentEvents, inFlight } = context.volumes;
    const rounds = Math.ceil(concurrentEvents / inFlight);
    const raw = await context.raw.measure(subject.raw, 'append-64-streams', async (family) =>
      family.appendSpread(await context.dir('raw-append-64-streams'), inFlight, rounds),
    );
    const timed = await withStore(subject, await context.dir('append-64-streams'), async (store) => {
      const revisions = new Array<number>(inFlight).fill(0);
      for (let w = 0; w < inFlight; w++) revisions[w] = await fillStream(store, `s-${w}`, 1, 1);
      return timeInFlight(concurrentEvents, inFlight, async (worker, call) => {
        const result = await store.append(`s-${worker}`, [benchEvent(call)], { expectedRevision: revisions[worker] as number });
        revisions[worker] = result.revision;
      });
    });
    return {
      rate: perSecond(timed.ops, timed.ms),
      latency: summarize(timed.latencies),
      rawRate: perSecond(raw.ops * inFlight, raw.ms),
    };
  },
};
