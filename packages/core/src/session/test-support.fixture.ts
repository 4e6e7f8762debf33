import { memoryStore, type EventStore } from '../kernel/index.js';
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

/** Deterministic UUIDs: 00000000-0000-4000-8000-000000000001, ...02, ... */
export function sequentialIds(prefix = '00000000-0000-4000-8000-'): () => string {
  let counter = 0;
  return () => `${prefix}${(++counter).toString(16).padStart(12, '0')}`;
}

/** A service on a fresh memory store with a fixed clock and id generator. */
export async function openTestHistory(options: Partial<SessionHistoryOptions> = {}): Promise<{ history: SessionHistory; store: EventStore }> {
  const store = options.store ?? memoryStore({ clock: () => new Date('2026-07-23T00:00:00.000Z') });
  const history = await openSessionHistory({ clock: steppingClock(), ids: sequentialIds(), ...options, store });
  return { history, store };
}

/** Starts a conversation session with `idempotencyId`, as most tests need one. */
export async function startConversation(history: SessionHistory, idempotencyId: string) {
  const started = await history.start({ idempotencyId, startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' });
  return started.value;
}
