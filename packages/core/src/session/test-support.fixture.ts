import { memoryStore, type EventStore } from '../kernel/index.js';
import { START_KEY_STREAM_PREFIX } from './ids.js';
import { openSessionHistory, type SessionHistory, type SessionHistoryOptions } from './service.js';

/** A clock that starts at `start` and moves one second on every reading, so every recorded time differs. */
export function steppingClock(start = '2026-07-23T00:00:00.000Z', stepMs = 1000): () => Date {
  let next = Date.parse(start);
  return () => {
    const value = new Date(next);
    next += stepMs;
    return value;
  };
}

/** A service on a fresh memory store with a stepping clock. */
export async function openTestHistory(options: Partial<SessionHistoryOptions> = {}): Promise<{ history: SessionHistory; store: EventStore }> {
  const store = options.store ?? memoryStore({ clock: () => new Date('2026-07-23T00:00:00.000Z') });
  const history = await openSessionHistory({ clock: steppingClock(), ...options, store });
  return { history, store };
}

/** The archive policies, set explicitly: the completion hands the session to the catalog and deletes it; `state` keys outside the whitelist are dropped. */
export const ARCHIVE_POLICIES = { completion: 'archive-and-delete', controlState: 'project' } as const satisfies Partial<SessionHistoryOptions>;

/** `openTestHistory` under the archive policies. */
export function openArchiveHistory(options: Partial<SessionHistoryOptions> = {}): Promise<{ history: SessionHistory; store: EventStore }> {
  return openTestHistory({ ...ARCHIVE_POLICIES, ...options });
}

/** Starts a conversation session with `idempotencyId`, as most tests need one. */
export async function startConversation(history: SessionHistory, idempotencyId: string) {
  const started = await history.start({ idempotencyId, startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' });
  return started.value;
}

/**
 * Wraps `inner` so a test can run something of its own right before the wrapped store's next append
 * reaches `inner` (a deterministic way to make another writer win a race), and count the appends, stream
 * reads and change-feed reads made through it.
 */
export function interleavingStore(inner: EventStore): {
  store: EventStore;
  beforeNextAppend(hook: () => Promise<unknown>): void;
  appends(): number;
  reads(): number;
  feedReads(): number;
} {
  const hooks: (() => Promise<unknown>)[] = [];
  const counts = { appends: 0, reads: 0, feedReads: 0 };
  const store: EventStore = {
    ...inner,
    append: async (stream, events, options) => {
      const hook = hooks.shift();
      if (hook) await hook();
      counts.appends++;
      return inner.append(stream, events, options);
    },
    read: (stream, options) => {
      counts.reads++;
      return inner.read(stream, options);
    },
    readAll: (options) => {
      counts.feedReads++;
      return inner.readAll(options);
    },
  };
  return {
    store,
    beforeNextAppend: (hook) => void hooks.push(hook),
    appends: () => counts.appends,
    reads: () => counts.reads,
    feedReads: () => counts.feedReads,
  };
}

/** Every recorded event of `stream`, in order. */
export async function eventsOf(store: EventStore, stream: string) {
  const read = await store.read(stream);
  const events = [];
  for await (const event of read.events) events.push(event);
  return events;
}

/** The names of every session stream and the catalog in the store (start-key streams only when asked for). */
export async function streamNames(store: EventStore, options: { startKeys?: boolean } = {}): Promise<string[]> {
  const names: string[] = [];
  for await (const { stream } of store.streams()) if (options.startKeys || !stream.startsWith(START_KEY_STREAM_PREFIX)) names.push(stream);
  return names;
}

/** How many changes the store's feed holds: equal before and after a refused call means nothing was written. */
export async function feedLength(store: EventStore): Promise<number> {
  let count = 0;
  for await (const _ of store.readAll()) count++;
  return count;
}

/** The revision of the stream's snapshot (0: none) and the revisions of the events after it. */
export async function layout(store: EventStore, stream: string): Promise<{ snapshot: number; events: number[] }> {
  const read = await store.read(stream);
  const events: number[] = [];
  for await (const event of read.events) events.push(event.revision);
  return { snapshot: read.snapshot?.revision ?? 0, events };
}

/** The whole numbers `from`, `from + 1`, … (`count` of them): the revisions a layout lists. */
export function upTo(count: number, from = 1): number[] {
  return Array.from({ length: count }, (_, index) => index + from);
}
