import type { EventStore, SessionHistory, SessionHistoryOptions } from '@sessionfold/core';

/**
 * The calls of the session service the bench drives, in the bench's own terms, so scenarios stay the same
 * when the service's input shapes change (only `loadService` knows them).
 */
export interface SessionDriver {
  /** Starts (idempotently, by `key`) a session; resolves to its id. */
  start(key: string): Promise<string>;
  /** Enqueues a command on the session (idempotently, by `key`); resolves to the command id. */
  enqueue(sessionId: string, key: string): Promise<string>;
  claim(commandId: string): Promise<void>;
  complete(commandId: string): Promise<void>;
  /** Replaces the control state at the session's current version. */
  checkpoint(sessionId: string): Promise<void>;
  /** Appends a line to the session's transcript. */
  appendTranscript(sessionId: string, text: string): Promise<void>;
  /** Reads one session record. */
  get(sessionId: string): Promise<void>;
  close(): Promise<void>;
}

/** Opens session drivers over stores. */
export interface SessionService {
  open(store: EventStore): Promise<SessionDriver>;
}

type Open = (options: SessionHistoryOptions) => Promise<SessionHistory>;

/** Wraps a service instance; remembers each session's version so checkpoints pass their expected version. */
function driver(history: SessionHistory): SessionDriver {
  const versions = new Map<string, number>();
  return {
    async start(key) {
      const { value } = await history.start({ idempotencyId: key, startedAt: new Date().toISOString(), sessionType: 'bench' });
      versions.set(value.id, value.version);
      return value.id;
    },
    async enqueue(sessionId, key) {
      return (await history.enqueue(sessionId, { idempotencyId: key, kind: 'bench', payload: { key } })).value.id;
    },
    async claim(commandId) {
      await history.claimCommand(commandId);
    },
    async complete(commandId) {
      await history.completeCommand(commandId, { outcome: { ok: true } });
    },
    async checkpoint(sessionId) {
      const expectedVersion = versions.get(sessionId) ?? (await history.get(sessionId)).version;
      const record = await history.checkpoint(sessionId, { expectedVersion, state: { sessionId, orchestration: { step: expectedVersion } } });
      versions.set(sessionId, record.version);
    },
    async appendTranscript(sessionId, text) {
      await history.appendTranscript(sessionId, { role: 'user-message', text });
    },
    async get(sessionId) {
      await history.get(sessionId);
    },
    close: () => history.close(),
  };
}

/** The session service from `@sessionfold/core`, or undefined while it is not built. */
export async function loadService(): Promise<SessionService | undefined> {
  const core = (await import('@sessionfold/core')) as Record<string, unknown>;
  const open = core['openSessionHistory'];
  if (typeof open !== 'function') return undefined;
  return { open: async (store) => driver(await (open as Open)({ store })) };
}
