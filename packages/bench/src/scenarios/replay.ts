import { measureRead, measureReadInChild, type ReadMode, type ReadResult } from '../read-measure.js';
import { fillStream, withStore, type Scenario, type ScenarioContext } from '../scenario.js';
import { perSecond, timeInFlight } from '../stats.js';
import type { StoreSubject } from '../stores.js';

/** Writes with `fill`, then measures `mode` — in a child process when the store can be reopened and isolation is on. */
async function fillThenRead(
  context: ScenarioContext,
  subject: StoreSubject,
  label: string,
  fill: Parameters<typeof withStore>[2],
  mode: ReadMode,
): Promise<ReadResult> {
  const dir = await context.dir(label);
  if (context.isolate && !subject.lacks.reopen) {
    await withStore(subject, dir, fill);
    return measureReadInChild(subject, dir, mode);
  }
  return withStore(subject, dir, async (store) => {
    await fill(store);
    return measureRead(store, mode);
  });
}

/** Replays one stream to a folded record. Raw: chunked journal read + sha256 + JSON.parse / stmt.iterate + JSON.parse. */
export const replayStream: Scenario = {
  id: 'replay',
  title: 'replay 1 stream',
  unit: 'events/s',
  requires: [],
  rawOperation: 'replay',
  async run(context, subject) {
    const { replayEvents, fillBatch } = context.volumes;
    const raw = await context.raw.measure(subject.raw, 'replay', async (family) => family.replay(await context.dir('raw-replay'), replayEvents));
    const read = await fillThenRead(context, subject, 'replay', (store) => fillStream(store, 'replayed', replayEvents, fillBatch), {
      kind: 'replay',
      stream: 'replayed',
    });
    return {
      rate: perSecond(read.events, read.ms),
      rawRate: perSecond(raw.events, raw.ms),
      rssGrowthMb: read.rssGrowthMb,
      rawRssGrowthMb: raw.rssGrowthMb,
      ...(read.events === replayEvents ? {} : { note: `read ${read.events} of ${replayEvents} events` }),
    };
  },
};

/** Reads the change feed of the same volume spread over 1,000 streams. */
export const readAllStreams: Scenario = {
  id: 'read-all',
  title: 'readAll, 1,000 streams',
  unit: 'events/s',
  requires: ['readAll'],
  rawOperation: 'readAll',
  async run(context, subject) {
    const { readAllEvents, readAllStreams: streams, fillBatch } = context.volumes;
    const per = Math.ceil(readAllEvents / streams);
    const raw = await context.raw.measure(subject.raw, 'read-all', async (family) => family.readAll(await context.dir('raw-read-all'), readAllEvents, streams));
    const read = await fillThenRead(
      context,
      subject,
      'read-all',
      async (store) => {
        // Setup: streams are filled 64 at a time where the store allows concurrent appends.
        const workers = subject.lacks.concurrentAppends ? 1 : Math.min(64, streams);
        await timeInFlight(streams, workers, (_worker, _call, index) => fillStream(store, `all-${index}`, per, fillBatch));
      },
      { kind: 'readAll' },
    );
    return {
      rate: perSecond(read.events, read.ms),
      rawRate: perSecond(raw.events, raw.ms),
      rssGrowthMb: read.rssGrowthMb,
      rawRssGrowthMb: raw.rssGrowthMb,
      ...(read.events === per * streams ? {} : { note: `read ${read.events} of ${per * streams} events` }),
    };
  },
};
