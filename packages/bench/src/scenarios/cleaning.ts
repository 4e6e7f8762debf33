import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { EventStore } from '@sessionfold/core';
import { benchEvent } from '../fixtures.js';
import { fillStream, withStore, type Measurement, type Scenario } from '../scenario.js';
import type { StoreSubject } from '../stores.js';
import { perSecond, summarize, timeInFlight, type Timed } from '../stats.js';

/** Events of each stream of the fixture, appended in one call. */
const PER_STREAM = 100;
/** One stream in this many stays live; the others are deleted or compacted: about 90 % of each sealed segment dies. */
const KEEP_EVERY = 10;
/** Streams filled per step (64 in flight) before the segment count is looked at again. */
const FILL_STEP = 1_024;
const IN_FLIGHT = 64;
/** The stream of the single appends made alongside. */
const PROBE = 'probe';
/** Cleaning is over once every sealed segment shrank, or none shrank for this long (longer for the first). */
const QUIET_MS = 5_000;
const FIRST_WAIT_MS = 30_000;

const MB = 1e6;

/** The sizes of the log's segments, in name (log) order. */
function segmentSizes(logDir: string): Array<[name: string, bytes: number]> {
  return readdirSync(logDir)
    .filter((name) => name.endsWith('.jsonl') && !name.startsWith('.'))
    .sort()
    .map((name) => [name, statSync(join(logDir, name)).size]);
}

/**
 * Single-event appends to the probe stream, one after another until `stop()` says so, each made on a turn of
 * the event loop of its own, as a service's requests arrive, and timed from before that turn. (A lone append is
 * written and synced synchronously inside promise reactions, so a loop of them that never yields starves the
 * cleaning's file I/O: no segment shrank in 30 s while one ran.)
 */
async function appendUntil(store: EventStore, from: number, stop: () => boolean): Promise<Timed & { revision: number }> {
  let revision = from;
  const latencies: number[] = [];
  const start = performance.now();
  do {
    // Timed from before the wait: a request arriving now waits out whatever holds the event loop.
    const t = performance.now();
    await new Promise((resolve) => setImmediate(resolve));
    revision = (await store.append(PROBE, [benchEvent(revision)], { expectedRevision: revision })).revision;
    latencies.push(performance.now() - t);
  } while (!stop());
  return { ops: latencies.length, ms: performance.now() - start, latencies, revision };
}

/**
 * Writes streams of `PER_STREAM` events (64 in flight) until the log in `dir` has `sealed` sealed segments;
 * reopens it and times `singleAppends` appends to the probe stream with nothing dead yet; reopens it again,
 * deletes or compacts every stream but one in ten and closes. Returns the streams written and the quiet appends.
 */
async function buildDeadLog(
  subject: StoreSubject,
  dir: string,
  sealed: number,
  singleAppends: number,
): Promise<{ streams: number; quiet: Timed & { revision: number } }> {
  const logDir = join(dir, 'log');
  const streams = await withStore(subject, dir, async (store) => {
    let written = 0;
    while (segmentSizes(logDir).length <= sealed) {
      const from = written;
      written += FILL_STEP;
      await timeInFlight(FILL_STEP, IN_FLIGHT, (_worker, _call, index) => fillStream(store, `c-${from + index}`, PER_STREAM, PER_STREAM));
    }
    return written;
  });
  // On a store just opened, as the appends made while cleaning will be.
  const quiet = await withStore(subject, dir, async (store) => {
    let count = 0;
    return appendUntil(store, await fillStream(store, PROBE, 1, 1), () => ++count >= singleAppends);
  });
  const store = await subject.open(dir);
  const deaths: Promise<void>[] = [];
  for (let s = 0; s < streams; s++) {
    if (s % KEEP_EVERY === 0) continue;
    const stream = `c-${s}`;
    deaths.push(
      s % 2 === 1
        ? store.deleteStream(stream, { expectedRevision: PER_STREAM })
        : store.compact(stream, { revision: PER_STREAM, state: { events: PER_STREAM }, identity: { stream, schemaVersion: 1 } }),
    );
  }
  // Closed in the same turn the deaths were asked for: they are still written (one flush), but the cleaning
  // their flush starts stops before its first segment, so all of it happens in the measured part.
  const closing = store.close();
  try {
    await Promise.all(deaths);
  } finally {
    await closing;
  }
  return { streams, quiet };
}

/**
 * Background cleaning of sealed segments that are about 90 % dead: a log of `cleaningSegments` sealed 64 MiB
 * segments of streams of 100 events, all but one stream in ten then deleted or compacted, the store reopened
 * and one append made. Measured until the sealed segments' bytes on disk stop shrinking: live bytes copied per
 * second, against a raw copy of the same shape. Single appends keep running alongside; their p99 is a second
 * row, against the same appends on the same store before anything was dead.
 */
export const cleaning: Scenario = {
  id: 'cleaning',
  title: 'clean sealed segments, 90 % dead',
  unit: 'MB/s',
  requires: ['segmentCleaning'],
  rawOperation: 'compact',
  limitText: 'file: read each segment, write its live lines to a new file, fdatasync, rename (64 MiB segments, 1 stream in 10 live)',
  async run(context, subject): Promise<Measurement[]> {
    const { cleaningSegments, singleAppends } = context.volumes;
    const family = context.raw.family(subject.raw);
    const raw = family.cleanSegments
      ? await context.raw.measure(subject.raw, 'cleaning', async () =>
          family.cleanSegments?.(await context.dir('raw-cleaning'), cleaningSegments, PER_STREAM, KEEP_EVERY),
        )
      : undefined;
    const dir = await context.dir('cleaning');
    const logDir = join(dir, 'log');
    const fixture = await buildDeadLog(subject, dir, cleaningSegments, singleAppends);

    const store = await subject.open(dir);
    try {
      const before = segmentSizes(logDir).slice(0, -1);
      const shrunk = new Map<string, { from: number; to: number }>();
      const start = performance.now();
      let lastShrink = start;
      const over = () => {
        const now = performance.now();
        for (const [name, from] of before) {
          if (shrunk.has(name)) continue;
          const to = statSync(join(logDir, name)).size;
          if (to < from) {
            shrunk.set(name, { from, to });
            lastShrink = now;
          }
        }
        return shrunk.size === before.length || now - lastShrink > (shrunk.size === 0 ? FIRST_WAIT_MS : QUIET_MS);
      };
      // The first append's flush starts the cleaning; the appends go on, one after another, until it is over.
      const during = await appendUntil(store, fixture.quiet.revision, over);
      const ms = lastShrink - start;
      if (shrunk.size === 0) throw new Error(`bench: no sealed segment of ${before.length} shrank within ${FIRST_WAIT_MS} ms of an append`);
      const copied = [...shrunk.values()].reduce((sum, s) => sum + s.to, 0);
      const cleaned = [...shrunk.values()].reduce((sum, s) => sum + s.from, 0);
      const quietP99 = summarize(fixture.quiet.latencies).p99Ms;
      const busy = summarize(during.latencies);
      return [
        {
          rate: copied / MB / (ms / 1000),
          ...(raw ? { rawRate: raw.bytes / MB / (raw.ms / 1000) } : {}),
          note:
            `${shrunk.size} of ${before.length} sealed segments (${(cleaned / MB).toFixed(0)} MB, ${((1 - copied / cleaned) * 100).toFixed(0)} % dead) ` +
            `cleaned in ${ms.toFixed(0)} ms, ${(copied / MB).toFixed(1)} MB copied; ${fixture.streams.toLocaleString('en-US')} streams` +
            (raw ? `; raw copy of ${(raw.bytes / MB).toFixed(1)} MB in ${raw.ms.toFixed(0)} ms` : ''),
        },
        {
          variant: { id: 'cleaning-append-1', title: 'append 1 event/call while cleaning', unit: 'calls/s (p99)' },
          rate: perSecond(1, busy.p99Ms),
          latency: busy,
          rawRate: perSecond(1, quietP99),
          limit: 'the same appends on the same store before anything was dead (1 / p99)',
          note: `p99 ${busy.p99Ms.toPrecision(3)} ms over ${busy.count} appends while cleaning, ${quietP99.toPrecision(3)} ms over ${fixture.quiet.ops} without`,
        },
      ];
    } finally {
      await store.close();
    }
  },
};
