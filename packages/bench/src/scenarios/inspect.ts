import { openSessionHistory, type EventStore, type NewEvent } from '@sessionfold/core';
import { sessionStream } from '@sessionfold/core/session';
import { startInspector, type Inspector } from '@sessionfold/inspector';
import type { Measurement, Scenario } from '../scenario.js';
import { summarize, timeInFlight } from '../stats.js';
import type { StoreSubject } from '../stores.js';

/** Starts in flight while the sessions fixture is built: enough to keep a store's group commit full. */
const FIXTURE_IN_FLIGHT = 256;
/** Timed requests of each row, after one untimed first request (reported in the note). */
const REQUESTS = 20;
/** The page the inspector answers by default: the sessions list's and the timeline's first page. */
const PAGE = 100;

const limitText = 'none: an absolute time target, no raw limit';

/**
 * Fills the store kept in `dir` (`fill`, on a writable store), then serves it as `sessionfold inspect` does: the
 * store opened read-only (the memory store, which cannot be reopened, as it is), a read-only service with
 * `follow: true` on it, and the inspector's server; `measure` asks the server's API what the page asks.
 */
async function withInspector<F, T>(
  subject: StoreSubject,
  dir: string,
  fill: (store: EventStore) => Promise<F>,
  measure: (inspector: Inspector, fixture: F) => Promise<T>,
): Promise<T> {
  const store = await subject.open(dir);
  let writerOpen = true;
  let view: EventStore | undefined;
  try {
    const fixture = await fill(store);
    if (subject.openReadOnly) {
      writerOpen = false;
      await store.close();
      view = await subject.openReadOnly(dir);
    }
    const reading = view ?? store;
    // Opening catches up with everything the fill wrote (untimed): the service then only follows, idle.
    const service = await openSessionHistory({ store: reading, readOnly: true, follow: true });
    try {
      const inspector = await startInspector({ store: reading, service, storeName: subject.name });
      try {
        return await measure(inspector, fixture);
      } finally {
        await inspector.close();
      }
    } finally {
      await service.close();
    }
  } finally {
    await view?.close();
    if (writerOpen) await store.close();
  }
}

/**
 * `GET path` of the inspector's API with its token, as a script or the page's server round trip would: one untimed
 * first request, then `REQUESTS` timed ones, each timed from the request to the last byte of the answer (over
 * loopback HTTP: the server's time plus the connection's); `check` looks at every answer.
 */
async function timedGets(inspector: Inspector, path: string, check: (body: unknown) => void): Promise<{ firstMs: number; latencies: number[] }> {
  const get = async (): Promise<number> => {
    const start = performance.now();
    const response = await fetch(`${inspector.origin}${path}`, { headers: { authorization: `Bearer ${inspector.token}` } });
    const text = await response.text();
    const ms = performance.now() - start;
    if (!response.ok) throw new Error(`bench: GET ${path} answered ${response.status}: ${text.slice(0, 200)}`);
    check(JSON.parse(text) as unknown);
    return ms;
  };
  const firstMs = await get();
  const latencies: number[] = [];
  for (let i = 0; i < REQUESTS; i++) latencies.push(await get());
  return { firstMs, latencies };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A row's measurement from its request times: pages/s as 1000 / p50. */
function measurement(latencies: readonly number[], note: string): Measurement {
  const latency = summarize(latencies);
  return { rate: 1000 / latency.p50Ms, latency, note };
}

/**
 * The sessions page's first page (`GET /api/v1/sessions`: the service's `listPage` with the page's defaults, 100
 * rows sorted by last activity) over `inspectSessions` started sessions.
 */
export const inspectSessions: Scenario = {
  id: 'inspect-sessions',
  title: 'inspect: sessions list, first page',
  unit: 'pages/s',
  requires: ['service'],
  rawOperation: 'coldOpen',
  limitText,
  async run(context, subject): Promise<Measurement> {
    const sessions = context.volumes.inspectSessions;
    const built = performance.now();
    return withInspector(
      subject,
      await context.dir('inspect-sessions'),
      async (store) => {
        const history = await openSessionHistory({ store });
        try {
          await timeInFlight(sessions, Math.min(FIXTURE_IN_FLIGHT, sessions), (_worker, _call, index) =>
            history.start({ idempotencyId: `inspect-${index}`, startedAt: new Date().toISOString(), sessionType: 'bench' }),
          );
          // Caught up before it closes, so the projection checkpoint it saves covers every start.
          await history.listPage({ limit: 1 });
        } finally {
          await history.close();
        }
        return performance.now() - built;
      },
      async (inspector, buildMs) => {
        const { firstMs, latencies } = await timedGets(inspector, '/api/v1/sessions', (body) => {
          const page = body as { sessions: unknown[]; total: number };
          if (page.total !== sessions || page.sessions.length !== Math.min(PAGE, sessions))
            throw new Error(
              `bench: the first page lists ${page.sessions.length} of ${page.total} sessions; expected ${Math.min(PAGE, sessions)} of ${sessions}`,
            );
        });
        return measurement(
          latencies,
          `${sessions.toLocaleString('en-US')} sessions, ${Math.min(PAGE, sessions)} a page, over loopback HTTP: first request ${firstMs.toFixed(1)} ms; fixture built in ${seconds(buildMs)}`,
        );
      },
    );
  },
};

/**
 * The timeline's first page (`GET /api/v1/sessions/<id>/events`: the 100 oldest retained events) of one session
 * of `inspectTimelineEvents` events with no snapshot: started by a service opened with `compaction: false`, its
 * transcript lines appended to its stream directly (in batches of `fillBatch`, untimed).
 */
export const inspectTimeline: Scenario = {
  id: 'inspect-timeline',
  title: 'inspect: timeline, first page',
  unit: 'pages/s',
  requires: ['service'],
  rawOperation: 'replay',
  limitText,
  async run(context, subject): Promise<Measurement> {
    const { inspectTimelineEvents: total, fillBatch } = context.volumes;
    const built = performance.now();
    return withInspector(
      subject,
      await context.dir('inspect-timeline'),
      async (store) => {
        const history = await openSessionHistory({ store, compaction: false });
        let id: string;
        try {
          id = (await history.start({ idempotencyId: 'inspect-timeline', startedAt: new Date().toISOString(), sessionType: 'bench' })).value.id;
        } finally {
          await history.close();
        }
        const stream = sessionStream(id);
        const at = new Date().toISOString();
        // SessionStarted is revision 1; the transcript lines follow it.
        let revision = 1;
        while (revision < total) {
          const size = Math.min(fillBatch, total - revision);
          const events: NewEvent[] = Array.from({ length: size }, (_, k) => ({
            type: 'TranscriptAppended',
            data: {
              at,
              role: (revision + k) % 2 === 0 ? 'user-message' : 'assistant-message',
              text: `line ${revision + k} of a transcript long enough to be typical`,
            },
          }));
          revision = (await store.append(stream, events, { expectedRevision: revision })).revision;
        }
        return { id, buildMs: performance.now() - built };
      },
      async (inspector, { id, buildMs }) => {
        const expected = Math.min(PAGE, total);
        const { firstMs, latencies } = await timedGets(inspector, `/api/v1/sessions/${id}/events`, (body) => {
          const page = body as { revision: number; compactedAt: number; events: unknown[] };
          if (page.revision !== total || page.compactedAt !== 0 || page.events.length !== expected)
            throw new Error(
              `bench: the timeline's first page has ${page.events.length} events of ${page.revision} (compacted at ${page.compactedAt}); expected ${expected} of ${total}`,
            );
        });
        return measurement(
          latencies,
          `one session of ${total.toLocaleString('en-US')} events, no snapshot, ${expected} a page, over loopback HTTP: first request ${firstMs.toFixed(1)} ms; fixture written in ${seconds(buildMs)}`,
        );
      },
    );
  },
};
