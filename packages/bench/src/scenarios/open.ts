import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { foldStream, memoryStore, openSessionHistory } from '@sessionfold/core';
import { sessionStream, sessionSummaryReducer } from '@sessionfold/core/session';
import type { Measurement, Scenario, ScenarioContext } from '../scenario.js';
import { alternate, median, perSecond, summarize, timeInFlight, type Timed } from '../stats.js';
import type { StoreSubject } from '../stores.js';
import { startMany, withService } from './service.js';

/** Calls in flight while a fixture is built: enough to keep a store's group commit full. */
const FIXTURE_IN_FLIGHT = 256;

/** What building a fixture cost, for the row's note. */
interface Fixture {
  first: string;
  sessions: number;
  ms: number;
}

/**
 * Starts `sessions` sessions in `dir`, then gives each `eventsPerSession - 1` transcript events more (appended
 * to its stream directly, 49 at a time, many in flight), and closes the service once its projection has caught
 * up, so the store holds the service's checkpoint of it (where the store has a checkpoint slot).
 */
async function buildSessions(context: ScenarioContext, subject: StoreSubject, dir: string, sessions: number, eventsPerSession: number): Promise<Fixture> {
  const started = performance.now();
  const first = await withService(context, subject, dir, async (driver, store) => {
    const ids = await startMany(driver, sessions, 'open', FIXTURE_IN_FLIGHT);
    const extra = eventsPerSession - 1;
    if (extra > 0) {
      const at = new Date().toISOString();
      const events = Array.from({ length: extra }, (_, k) => ({
        type: 'TranscriptAppended',
        data: { at, role: k % 2 === 0 ? 'user-message' : 'assistant-message', text: `line ${k} of a transcript long enough to be typical` },
      }));
      // SessionStarted is revision 1 of every started session.
      await timeInFlight(ids.length, Math.min(FIXTURE_IN_FLIGHT, ids.length), (_w, _k, index) =>
        store.append(sessionStream(ids[index] as string), events, { expectedRevision: 1 }),
      );
    }
    const head = ids[0];
    if (head === undefined) throw new Error('bench: no session was started');
    // A call that catches up, so the checkpoint saved at close covers the appends above.
    await driver.get(head);
    return head;
  });
  return { first, sessions, ms: performance.now() - started };
}

/** One cold open of the store in `dir`: open the store, open the service, first `get`; closing is not timed. */
async function timedOpen(context: ScenarioContext, subject: StoreSubject, dir: string, first: string): Promise<Timed> {
  const start = performance.now();
  let ms = Number.NaN;
  await withService(context, subject, dir, async (driver) => {
    await driver.get(first);
    ms = performance.now() - start;
  });
  return { ops: 1, ms, latencies: [ms] };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Open time against history depth: a store of sessions with `depthEvents` events each against one of as many
 * sessions with one event each. With the projection checkpointed, the open reads the checkpoint and the
 * feed after it, so the depth of each session's history should not matter.
 */
export const openHistoryDepth: Scenario = {
  id: 'open-history-depth',
  title: 'open → first get, deep vs shallow',
  unit: 'opens/s',
  requires: ['service', 'reopen'],
  rawOperation: 'coldOpen',
  limitText: 'the same open of a store with as many sessions of 1 event each',
  async run(context, subject): Promise<Measurement> {
    const { depthSessions, depthEvents, openRepeats } = context.volumes;
    const shallowDir = await context.dir('open-shallow');
    const deepDir = await context.dir('open-deep');
    const shallow = await buildSessions(context, subject, shallowDir, depthSessions, 1);
    const deep = await buildSessions(context, subject, deepDir, depthSessions, depthEvents);
    const [shallowTimed, deepTimed] = await alternate(
      openRepeats,
      () => timedOpen(context, subject, shallowDir, shallow.first),
      () => timedOpen(context, subject, deepDir, deep.first),
    );
    const deepMs = median(deepTimed.latencies);
    const shallowMs = median(shallowTimed.latencies);
    return {
      rate: 1000 / deepMs,
      latency: summarize(deepTimed.latencies),
      rawRate: 1000 / shallowMs,
      note: `${depthSessions.toLocaleString('en-US')} sessions of ${depthEvents} events: ${deepMs.toFixed(0)} ms; of 1 event: ${shallowMs.toFixed(0)} ms; fixtures built in ${seconds(deep.ms)} and ${seconds(shallow.ms)}`,
    };
  },
};

/**
 * The projection's summary of one session started through the service (about 700 bytes of JSON), as the raw
 * limit's record: made by the domain itself, so it keeps the shape the projection holds.
 */
async function startedSummary(): Promise<{ json: string; id: string }> {
  const store = memoryStore();
  const history = await openSessionHistory({ store });
  const { value } = await history.start({ idempotencyId: 'open-0', startedAt: '2026-12-01T05:34:15.058Z', sessionType: 'bench' });
  await history.close();
  const stream = sessionStream(value.id);
  const folded = await foldStream(store, stream, sessionSummaryReducer);
  await store.close();
  return { json: JSON.stringify([stream, folded.revision, folded.state]), id: value.id };
}

/** Writes `count` session summaries, one JSON record a line (untimed); the returned function reads and parses them all. */
async function summaryFile(dir: string, count: number): Promise<() => Timed> {
  const path = join(dir, 'summaries.jsonl');
  const { json, id } = await startedSummary();
  // Each line another session id of the same length.
  const line = (index: number) => json.replaceAll(id, id.slice(0, 24) + index.toString(16).padStart(12, '0'));
  writeFileSync(path, Array.from({ length: count }, (_, index) => line(index)).join('\n'));
  return () => {
    const start = performance.now();
    let parsed = 0;
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      JSON.parse(line);
      parsed++;
    }
    const ms = performance.now() - start;
    if (parsed !== count) throw new Error(`bench: read ${parsed} of ${count} summaries`);
    return { ops: count, ms, latencies: [ms] };
  };
}

/**
 * Open with many sessions: open store + service + first `get`, against reading and parsing a file of as many
 * session summaries (one JSON record a line): the least an open that loads every session's summary can do.
 */
export const openManySessions: Scenario = {
  id: 'open-many',
  title: 'open → first get, many sessions',
  unit: 'sessions/s',
  requires: ['service', 'reopen'],
  rawOperation: 'coldOpen',
  limitText: 'read + JSON.parse a file of as many session summaries, one per line (about 700 bytes each)',
  async run(context, subject): Promise<Measurement> {
    const { manySessions, openRepeats } = context.volumes;
    const dir = await context.dir('open-many');
    const fixture = await buildSessions(context, subject, dir, manySessions, 1);
    const readSummaries = await summaryFile(await context.dir('raw-open-many'), manySessions);
    const [raw, timed] = await alternate(
      openRepeats,
      async () => readSummaries(),
      () => timedOpen(context, subject, dir, fixture.first),
    );
    const ms = median(timed.latencies);
    const rawMs = median(raw.latencies);
    return {
      rate: perSecond(manySessions, ms),
      latency: summarize(timed.latencies),
      rawRate: perSecond(manySessions, rawMs),
      note: `${manySessions.toLocaleString('en-US')} sessions: open ${ms.toFixed(0)} ms, raw ${rawMs.toFixed(0)} ms; fixture built in ${seconds(fixture.ms)}`,
    };
  },
};
