import type { EventStore } from '@sessionfold/core';
import { benchEvent, benchEvents } from '../fixtures.js';
import type { RawFamily, RawWriter } from '../raw-limits.js';
import { fillStream, withStore, type Measurement, type Scenario, type ScenarioContext } from '../scenario.js';
import { alternate, perSecond, summarize, timeInFlight, timeSequential, type Timed } from '../stats.js';
import type { StoreSubject } from '../stores.js';

/**
 * Rounds that alternate raw writes and store appends, so both see the same background load: many short
 * rounds for sequential appends; fewer for appends in flight, whose pipeline fills and drains each round.
 */
const SEQUENTIAL_ROUNDS = 30;
const IN_FLIGHT_ROUNDS = 10;

/** How one append scenario drives its raw limit and its store. */
interface PairedAppends {
  label: string;
  rounds: number;
  /** Raw writes in the whole scenario, and events each one carries. */
  rawWrites: number;
  rawEventsPerWrite: number;
  openRaw(family: RawFamily, dir: string): Promise<RawWriter>;
  /** Events each timed store operation carries. */
  eventsPerOp: number;
  /** Sets up the store (untimed) and returns the timed work of one round. */
  prepare(store: EventStore, rounds: number): Promise<(round: number) => Promise<Timed>>;
}

/** Measures a store's appends and the matching raw writes in alternating rounds. */
async function pairedAppends(context: ScenarioContext, subject: StoreSubject, spec: PairedAppends): Promise<Measurement> {
  const rounds = Math.max(1, Math.min(spec.rounds, spec.rawWrites));
  const perRound = Math.ceil(spec.rawWrites / rounds);
  const writer = await spec.openRaw(context.raw.family(subject.raw), await context.dir(`raw-${spec.label}`));
  try {
    return await withStore(subject, await context.dir(spec.label), async (store) => {
      const storeRound = await spec.prepare(store, rounds);
      const [raw, measured] = await alternate(rounds, (round) => timeSequential(perRound, (i) => writer.write(round * perRound + i)), storeRound);
      return {
        rate: perSecond(measured.ops * spec.eventsPerOp, measured.ms),
        latency: summarize(measured.latencies),
        rawRate: perSecond(raw.ops * spec.rawEventsPerWrite, raw.ms),
      };
    });
  } finally {
    await writer.close();
  }
}

/** Durable appends of one event per call, one after another. Raw: one line + fdatasync / one-row transaction. */
export const appendSingle: Scenario = {
  id: 'append-1',
  title: 'append 1 event/call',
  unit: 'events/s',
  requires: [],
  rawOperation: 'appendBatches',
  run(context, subject) {
    const n = context.volumes.singleAppends;
    return pairedAppends(context, subject, {
      label: 'append-1',
      rounds: SEQUENTIAL_ROUNDS,
      rawWrites: n,
      rawEventsPerWrite: 1,
      openRaw: (family, dir) => family.appendBatches(dir, 1, n),
      eventsPerOp: 1,
      async prepare(store, rounds) {
        let revision = await fillStream(store, 'single', 1, 1);
        const perRound = Math.ceil(n / rounds);
        return (round) =>
          timeSequential(perRound, async (i) => {
            revision = (await store.append('single', [benchEvent(round * perRound + i)], { expectedRevision: revision })).revision;
          });
      },
    });
  },
};

/** Durable appends of 100 events per call. Raw: 100 lines per fdatasync / 100 rows per transaction. */
export const appendBatch: Scenario = {
  id: 'append-100',
  title: 'append 100 events/call',
  unit: 'events/s',
  requires: [],
  rawOperation: 'appendBatches',
  run(context, subject) {
    const { batchCalls, batchSize } = context.volumes;
    return pairedAppends(context, subject, {
      label: 'append-100',
      rounds: SEQUENTIAL_ROUNDS,
      rawWrites: batchCalls,
      rawEventsPerWrite: batchSize,
      openRaw: (family, dir) => family.appendBatches(dir, batchSize, batchCalls),
      eventsPerOp: batchSize,
      async prepare(store, rounds) {
        let revision = await fillStream(store, 'batch', 1, 1);
        const perRound = Math.ceil(batchCalls / rounds);
        return (round) =>
          timeSequential(perRound, async (i) => {
            const events = benchEvents((round * perRound + i) * batchSize, batchSize);
            revision = (await store.append('batch', events, { expectedRevision: revision })).revision;
          });
      },
    });
  },
};

/** 64 single-event appends in flight to one stream. Raw: one write + one fdatasync per 64 lines of the log / 64 rows per transaction. */
export const appendInFlightOneStream: Scenario = {
  id: 'append-64-one-stream',
  title: '64 in flight, 1 stream',
  unit: 'events/s',
  requires: ['concurrentAppends', 'concurrentAppendsToOneStream'],
  rawOperation: 'appendBatches',
  run(context, subject) {
    const { concurrentEvents, inFlight } = context.volumes;
    const writes = Math.ceil(concurrentEvents / inFlight);
    return pairedAppends(context, subject, {
      label: 'append-64-one',
      rounds: IN_FLIGHT_ROUNDS,
      rawWrites: writes,
      rawEventsPerWrite: inFlight,
      openRaw: (family, dir) => family.appendBatches(dir, inFlight, writes),
      eventsPerOp: 1,
      async prepare(store, rounds) {
        await fillStream(store, 'shared', 1, 1);
        const perRound = Math.ceil(writes / rounds) * inFlight;
        // Callers that do not know each other's revisions: each append expects 'any'.
        return () =>
          timeInFlight(perRound, inFlight, (worker, call) => store.append('shared', [benchEvent(call * inFlight + worker)], { expectedRevision: 'any' }));
      },
    });
  },
};

/**
 * 64 single-event appends in flight, one per stream, to 64 streams. Raw: one write + one fdatasync per 64 lines
 * (the streams share the one log) / 64 rows per transaction.
 */
export const appendInFlightManyStreams: Scenario = {
  id: 'append-64-streams',
  title: '64 in flight, 64 streams',
  unit: 'events/s',
  requires: ['concurrentAppends'],
  rawOperation: 'appendSpread',
  run(context, subject) {
    const { concurrentEvents, inFlight } = context.volumes;
    const writes = Math.ceil(concurrentEvents / inFlight);
    return pairedAppends(context, subject, {
      label: 'append-64-streams',
      rounds: IN_FLIGHT_ROUNDS,
      rawWrites: writes,
      rawEventsPerWrite: inFlight,
      openRaw: (family, dir) => family.appendSpread(dir, inFlight, writes),
      eventsPerOp: 1,
      async prepare(store, rounds) {
        const revisions = new Array<number>(inFlight).fill(0);
        for (let w = 0; w < inFlight; w++) revisions[w] = await fillStream(store, `s-${w}`, 1, 1);
        const perRound = Math.ceil(writes / rounds) * inFlight;
        return () =>
          timeInFlight(perRound, inFlight, async (worker, call) => {
            const result = await store.append(`s-${worker}`, [benchEvent(call)], { expectedRevision: revisions[worker] as number });
            revisions[worker] = result.revision;
          });
      },
    });
  },
};
