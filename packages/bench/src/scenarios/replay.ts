import type { EventStore } from '@sessionfold/core';
import type { RawFamily, RawRead } from '../raw-limits.js';
import { measureRead, measureReadInChild, type ReadMode, type ReadResult } from '../read-measure.js';
import { fillStream, type Measurement, type Scenario, type ScenarioContext } from '../scenario.js';
import { median, perSecond, timeInFlight } from '../stats.js';
import type { StoreSubject } from '../stores.js';

/** How one read scenario fills its store and prepares its raw limit. */
interface PairedReads {
  label: string;
  expected: number;
  fill(store: EventStore): Promise<unknown>;
  mode: ReadMode;
  prepareRaw(family: RawFamily, dir: string): Promise<() => Promise<RawRead>>;
}

/**
 * Fills the store once, then reads it `readRepeats` times, alternating with the raw read (raw first on even
 * repeats): rates are the medians, RSS growth the largest seen. A store that can be reopened is read in a
 * child process when isolation is on; otherwise it stays open and is read in this process.
 */
async function pairedReads(context: ScenarioContext, subject: StoreSubject, spec: PairedReads): Promise<Measurement> {
  const rawRead = await spec.prepareRaw(context.raw.family(subject.raw), await context.dir(`raw-${spec.label}`));
  const dir = await context.dir(spec.label);
  const isolated = context.isolate && !subject.lacks.reopen;
  const store = await subject.open(dir);
  let open = true;
  const raws: RawRead[] = [];
  const reads: ReadResult[] = [];
  try {
    await spec.fill(store);
    if (isolated) {
      open = false;
      await store.close();
    }
    const readStore = () => (isolated ? measureReadInChild(subject, dir, spec.mode) : measureRead(store, spec.mode));
    for (let repeat = 0; repeat < Math.max(1, context.volumes.readRepeats); repeat++) {
      if (repeat % 2 === 0) {
        raws.push(await rawRead());
        reads.push(await readStore());
      } else {
        reads.push(await readStore());
        raws.push(await rawRead());
      }
    }
  } finally {
    if (open) await store.close();
  }
  const short = reads.find((read) => read.events !== spec.expected);
  return {
    rate: median(reads.map((read) => perSecond(read.events, read.ms))),
    rawRate: median(raws.map((read) => perSecond(read.events, read.ms))),
    rssGrowthMb: Math.max(...reads.map((read) => read.rssGrowthMb)),
    rawRssGrowthMb: Math.max(...raws.map((read) => read.rssGrowthMb)),
    ...(short ? { note: `read ${short.events} of ${spec.expected} events` } : {}),
  };
}

/** Replays one stream to a folded record. Raw: chunked log read + sha256 + JSON.parse / stmt.iterate + JSON.parse. */
export const replayStream: Scenario = {
  id: 'replay',
  title: 'replay 1 stream',
  unit: 'events/s',
  requires: [],
  rawOperation: 'replay',
  run(context, subject) {
    const { replayEvents, fillBatch } = context.volumes;
    return pairedReads(context, subject, {
      label: 'replay',
      expected: replayEvents,
      fill: (store) => fillStream(store, 'replayed', replayEvents, fillBatch),
      mode: { kind: 'replay', stream: 'replayed' },
      prepareRaw: (family, dir) => family.replay(dir, replayEvents),
    });
  },
};

/**
 * Reads the change feed of the same volume spread over 1,000 streams. Its fill (one append of up to `fillBatch`
 * events per stream, 64 in flight) is a second row where the store's raw family measures the same writes as
 * multi-row inserts, 64 streams' rows per statement.
 */
export const readAllStreams: Scenario = {
  id: 'read-all',
  title: 'readAll, 1,000 streams',
  unit: 'events/s',
  requires: ['readAll'],
  rawOperation: 'readAll',
  async run(context, subject) {
    const { readAllEvents, readAllStreams: streams, fillBatch } = context.volumes;
    const per = Math.ceil(readAllEvents / streams);
    const workers = subject.lacks.concurrentAppends ? 1 : Math.min(64, streams);
    let fillMs = 0;
    const read = await pairedReads(context, subject, {
      label: 'read-all',
      expected: per * streams,
      // Streams are filled 64 at a time where the store allows concurrent appends.
      fill: async (store) => {
        fillMs = (await timeInFlight(streams, workers, (_worker, _call, index) => fillStream(store, `all-${index}`, per, fillBatch))).ms;
      },
      mode: { kind: 'readAll' },
      prepareRaw: (family, dir) => family.readAll(dir, per * streams, streams),
    });
    const family = context.raw.family(subject.raw);
    if (family.fillSpread === undefined) return read;
    const raw = await family.fillSpread(await context.dir('raw-fill'), streams, per, workers, fillBatch);
    const fill: Measurement = {
      variant: { id: 'read-all-fill', title: `fill 1,000 streams, ${workers} in flight` },
      rate: perSecond(per * streams, fillMs),
      rawRate: perSecond(per * streams, raw.ms),
      limit: `${family.name}: the same events, ${workers} streams' rows per multi-row INSERT … SELECT unnest(arrays)`,
    };
    return [read, fill];
  },
};
