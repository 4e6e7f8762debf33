import { benchEvent } from '../fixtures.js';
import { measureOpenHeap, measureOpenHeapInChild, type OpenHeap } from '../heap-measure.js';
import { withStore, type Measurement, type Scenario } from '../scenario.js';
import { perSecond, timeInFlight } from '../stats.js';

/** Appends in flight while the fixture is written, as a busy service keeps them. */
const IN_FLIGHT = 256;
/** The stream count the heap target is stated at. */
const TARGET_STREAMS = 100_000;

/**
 * The heap an open store's index holds: `heapStreams` streams of `heapEvents` events each, written as a service
 * writes them (one round per event, each appending one event to every stream, 256 in flight), closed, then
 * opened again. Reported: the heap in use after that open minus the heap after opening an empty store the same
 * way (each open in a child process run with `--expose-gc`, after a full collection), and the open's time.
 */
export const indexHeap: Scenario = {
  id: 'index-heap',
  title: 'index heap after open',
  unit: 'streams/s',
  requires: ['reopen', 'heapIndex'],
  rawOperation: 'coldOpen',
  limitText: 'none: the heap is compared with that of an empty store opened the same way',
  async run(context, subject): Promise<Measurement> {
    const { heapStreams, heapEvents } = context.volumes;
    const emptyDir = await context.dir('index-heap-empty');
    await withStore(subject, emptyDir, async () => undefined);
    const dir = await context.dir('index-heap');
    const built = performance.now();
    await withStore(subject, dir, async (store) => {
      for (let round = 0; round < heapEvents; round++) {
        await timeInFlight(heapStreams, Math.min(IN_FLIGHT, heapStreams), (_worker, _call, index) =>
          store.append(`h-${index}`, [benchEvent(round)], { expectedRevision: round === 0 ? 'no_stream' : round }),
        );
      }
    });
    const buildMs = performance.now() - built;
    const measure = (at: string): Promise<OpenHeap> => (context.isolate ? measureOpenHeapInChild(subject, at) : measureOpenHeap(subject, at));
    const empty = await measure(emptyDir);
    const full = await measure(dir);
    const heapMb = full.heapMb - empty.heapMb;
    const perStreamKb = (heapMb * 1024) / heapStreams;
    const how = full.collected && empty.collected ? 'after a full GC' : 'without --expose-gc: heapUsed after a few turns, garbage included';
    return {
      rate: perSecond(heapStreams, full.openMs),
      latency: { count: 1, p50Ms: full.openMs, p99Ms: full.openMs },
      heapGrowthMb: heapMb,
      note:
        `${heapStreams.toLocaleString('en-US')} streams × ${heapEvents} events: heap +${heapMb.toFixed(1)} MB over an empty store ` +
        `(${perStreamKb.toFixed(2)} KB a stream, ≈ ${((perStreamKb * TARGET_STREAMS) / 1024).toFixed(0)} MB at ${TARGET_STREAMS.toLocaleString('en-US')}; ${how}), ` +
        `open ${full.openMs.toFixed(0)} ms (empty ${empty.openMs.toFixed(0)} ms); fixture built in ${(buildMs / 1000).toFixed(1)} s`,
    };
  },
};
