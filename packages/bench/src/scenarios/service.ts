import type { EventStore } from '@sessionfold/core';
import type { Measurement, Scenario, ScenarioContext } from '../scenario.js';
import type { SessionDriver, SessionService } from '../service-api.js';
import { alternate, mergeTimed, perSecond, summarize, timeInFlight, timeSequential, type Timed } from '../stats.js';
import type { StoreSubject } from '../stores.js';

/** The service, which the harness has already checked is built. */
async function service(context: ScenarioContext): Promise<SessionService> {
  const found = await context.service();
  if (!found) throw new Error('bench: the session service is not built');
  return found;
}

/** Starts `count` sessions with `inFlight` calls in flight (setup, untimed); resolves to their ids. */
export async function startMany(driver: SessionDriver, count: number, prefix: string, inFlight = 64): Promise<string[]> {
  const ids = new Array<string>(count);
  await timeInFlight(count, Math.min(inFlight, count), async (_worker, _call, index) => {
    ids[index] = await driver.start(`${prefix}-${index}`);
  });
  return ids;
}

/** Opens store + service in `dir`, runs `body`, closes both. */
export async function withService<T>(
  context: ScenarioContext,
  subject: StoreSubject,
  dir: string,
  body: (driver: SessionDriver, store: EventStore) => Promise<T>,
): Promise<T> {
  const store = await subject.open(dir);
  try {
    const driver = await (await service(context)).open(store);
    try {
      return await body(driver, store);
    } finally {
      await driver.close();
    }
  } finally {
    await store.close();
  }
}

/** The durable appends one round trip makes: start, enqueue, claim, complete, checkpoint. */
const APPENDS_PER_ROUND_TRIP = 5;
/** Round trips made untimed, on the raw writer and on the service, before the timed rounds. */
const WARM_UP_ROUND_TRIPS = 100;

/** start → enqueue → claim → complete → checkpoint, one after another. Raw: five single durable writes. */
export const serviceRoundTrip: Scenario = {
  id: 'service-round-trip',
  title: 'service round trip',
  unit: 'round trips/s',
  requires: ['service'],
  rawOperation: 'appendBatches',
  limitText: 'five 1-event durable writes of the raw family per round trip',
  async run(context, subject) {
    const n = context.volumes.roundTrips;
    const rounds = Math.max(1, Math.min(10, n));
    const perRound = Math.ceil(n / rounds);
    const family = context.raw.family(subject.raw);
    const warmUp = Math.min(perRound, WARM_UP_ROUND_TRIPS);
    // Every write of the raw writer has an index of its own (the SQLite family writes it as the row's revision).
    const writer = await family.appendBatches(await context.dir('raw-round-trip'), 1, (warmUp + perRound * rounds) * APPENDS_PER_ROUND_TRIP);
    // Where a new stream is a file, also what the same five writes cost when the first creates the session's
    // stream, as every round trip's start does: the floor the layout sets, reported beside the target's ratio.
    const floorWriter = await family.newStreamWrites?.(await context.dir('raw-round-trip-floor'), APPENDS_PER_ROUND_TRIP);
    const floors: Timed[] = [];
    try {
      const [raw, timed] = await withService(context, subject, await context.dir('service-round-trip'), async (driver) => {
        const rawTrip = async (trip: number) => {
          for (let k = 0; k < APPENDS_PER_ROUND_TRIP; k++) await writer.write(trip * APPENDS_PER_ROUND_TRIP + k);
        };
        const serviceTrip = async (name: string) => {
          const session = await driver.start(`round-trip-${name}`);
          const command = await driver.enqueue(session, `command-${name}`);
          await driver.claim(command);
          await driver.complete(command);
          await driver.checkpoint(session);
        };
        // One untimed round of each first: a rate of steady work, not of the JIT compiling it.
        await timeSequential(warmUp, (i) => rawTrip(perRound * rounds + i));
        await timeSequential(warmUp, (i) => serviceTrip(`warm-up-${i}`));
        return alternate(
          rounds,
          async (round) => {
            const plain = await timeSequential(perRound, (i) => rawTrip(round * perRound + i));
            if (floorWriter) floors.push(await timeSequential(perRound, (i) => floorWriter.write(round * perRound + i)));
            return plain;
          },
          (round) => timeSequential(perRound, (i) => serviceTrip(`${round}-${i}`)),
        );
      });
      const rate = perSecond(timed.ops, timed.ms);
      const floor = floors.length > 0 ? mergeTimed(floors) : undefined;
      const floorRate = floor && perSecond(floor.ops, floor.ms);
      const note = floorRate && `new-stream floor ${Math.round(floorRate).toLocaleString('en-US')}/s: ${(rate / floorRate).toFixed(2)}× of it`;
      return { rate, latency: summarize(timed.latencies), rawRate: perSecond(raw.ops, raw.ms), ...(note ? { note } : {}) };
    } finally {
      await writer.close();
      await floorWriter?.close();
    }
  },
};

/** Calls per round of the concurrent-transcript scenario. */
const TRANSCRIPT_CALLS = 100;

/**
 * 100 `appendTranscript` calls on one session at once (the service decides them together and appends them in
 * few batches), against the same 100 calls on another session made one after another, in alternating rounds.
 */
export const serviceConcurrentTranscript: Scenario = {
  id: 'service-concurrent-transcript',
  title: '100 concurrent appendTranscript, 1 session',
  unit: 'calls/s',
  requires: ['service'],
  rawOperation: 'appendBatches',
  limitText: 'the same 100 calls on one session, one after another',
  async run(context, subject) {
    const rounds = context.volumes.transcriptRounds;
    const [sequential, concurrent] = await withService(context, subject, await context.dir('service-concurrent-transcript'), async (driver) => {
      const [one, other] = await startMany(driver, 2, 'transcript');
      if (one === undefined || other === undefined) throw new Error('bench: no session was started');
      return alternate(
        rounds,
        (round) => timeSequential(TRANSCRIPT_CALLS, (i) => driver.appendTranscript(one, `line ${round}-${i}`)),
        async (round) => {
          const latencies = new Array<number>(TRANSCRIPT_CALLS);
          const start = performance.now();
          await Promise.all(
            Array.from({ length: TRANSCRIPT_CALLS }, async (_, i) => {
              await driver.appendTranscript(other, `line ${round}-${i}`);
              latencies[i] = performance.now() - start;
            }),
          );
          return { ops: TRANSCRIPT_CALLS, ms: performance.now() - start, latencies };
        },
      );
    });
    return { rate: perSecond(concurrent.ops, concurrent.ms), latency: summarize(concurrent.latencies), rawRate: perSecond(sequential.ops, sequential.ms) };
  },
};

/** Opens a store holding many sessions, cold: open store, open service, first `get`. Raw: read the log/every row once. */
export const coldOpen: Scenario = {
  id: 'cold-open',
  title: 'cold open → first get',
  unit: 'sessions/s',
  requires: ['service', 'reopen'],
  rawOperation: 'coldOpen',
  async run(context, subject) {
    const sessions = context.volumes.coldOpenSessions;
    const dir = await context.dir('cold-open');
    const first = await withService(context, subject, dir, async (driver) => (await startMany(driver, sessions, 'cold'))[0]);
    if (!first) throw new Error('bench: no session was started');
    const perSession = await (async () => {
      const store = await subject.open(dir);
      try {
        return (await store.read((await firstStream(store)) ?? first)).revision;
      } finally {
        await store.close();
      }
    })();
    const raw = await context.raw.measure(subject.raw, `cold-open-${perSession}`, async (family) =>
      family.coldOpen(await context.dir('raw-cold-open'), sessions, Math.max(1, perSession)),
    );
    const start = performance.now();
    let ms = Number.NaN;
    await withService(context, subject, dir, async (driver) => {
      await driver.get(first);
      ms = performance.now() - start;
    });
    return {
      rate: perSecond(sessions, ms),
      latency: { count: 1, p50Ms: ms, p99Ms: ms },
      rawRate: perSecond(sessions, raw.ms),
      note: `${sessions.toLocaleString('en-US')} sessions, ${perSession} event(s) each`,
    };
  },
};

/** The first stream of a store, to learn how many events a started session holds. */
async function firstStream(store: Awaited<ReturnType<StoreSubject['open']>>): Promise<string | undefined> {
  for await (const { stream } of store.streams({ prefix: 'session-' })) return stream;
  return undefined;
}

/** Opens a store and service in a fresh directory and starts `existing` sessions in it (setup). */
async function openWith(context: ScenarioContext, subject: StoreSubject, existing: number) {
  const store = await subject.open(await context.dir(`scaling-${existing}`));
  const driver = await (await service(context)).open(store);
  await startMany(driver, existing, 'existing');
  return {
    driver,
    close: async () => {
      await driver.close();
      await store.close();
    },
  };
}

type Call = 'start' | 'enqueue' | 'claim';

/**
 * Latencies of start, enqueue and claim on two stores at once, one holding `few` sessions and one `many`,
 * call by call in alternation so background load falls on both alike.
 */
async function callLatencies(context: ScenarioContext, subject: StoreSubject, few: number, many: number): Promise<Record<Call, [Timed, Timed]>> {
  const calls = context.volumes.scalingCalls;
  const sides = [await openWith(context, subject, few), await openWith(context, subject, many)] as const;
  try {
    const sessions: [string[], string[]] = [[], []];
    const commands: [string[], string[]] = [[], []];
    const pair = (op: (side: 0 | 1, i: number) => Promise<unknown>) =>
      alternate(
        calls,
        (i) => timeSequential(1, () => op(0, i)),
        (i) => timeSequential(1, () => op(1, i)),
      );
    const start = await pair(async (side, i) => sessions[side].push(await sides[side].driver.start(`timed-${i}`)));
    const enqueue = await pair(async (side, i) => commands[side].push(await sides[side].driver.enqueue(sessions[side][i] as string, `command-${i}`)));
    const claim = await pair((side, i) => sides[side].driver.claim(commands[side][i] as string));
    return { start, enqueue, claim };
  } finally {
    for (const side of sides) await side.close();
  }
}

/**
 * `start`, `enqueue` and `claimCommand` with few and with many sessions in the store: each call should cost
 * O(events of its own stream). Rates come from median latencies; the limit is the same store with few sessions.
 */
export const serviceScaling: Scenario = {
  id: 'scaling',
  title: 'service call vs sessions',
  unit: 'calls/s (p50)',
  requires: ['service'],
  rawOperation: 'appendBatches',
  limitText: 'the same call on the same store holding few sessions',
  async run(context, subject): Promise<Measurement[]> {
    const { scalingSmall, scalingLarge } = context.volumes;
    const measured = await callLatencies(context, subject, scalingSmall, scalingLarge);
    return (['start', 'enqueue', 'claim'] as const).map((call) => {
      const few = summarize(measured[call][0].latencies);
      const many = summarize(measured[call][1].latencies);
      return {
        variant: { id: `scaling-${call}`, title: `${call} @ ${scalingLarge.toLocaleString('en-US')} vs ${scalingSmall} sessions` },
        rate: 1000 / many.p50Ms,
        latency: many,
        rawRate: 1000 / few.p50Ms,
        note: `p50 ${few.p50Ms.toPrecision(3)} ms with ${scalingSmall} sessions`,
      };
    });
  },
};
