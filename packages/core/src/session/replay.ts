import { foldStream } from '../kernel/fold.js';
import { InvalidInputError } from '../kernel/errors.js';
import type { EventStore } from '../kernel/port.js';
import { SessionHistoryError } from './errors.js';
import { sessionStream } from './ids.js';
import { parseInput, sessionIdSchema } from './inputs.js';
import type { SessionRecord } from './model.js';
import { sessionReducer } from './reducer.js';
import { materialise } from './view.js';

/** Options of `replaySession`. */
export interface ReplayOptions {
  /** Folds only up to this revision (a retained one: at or after the stream's snapshot); default: every event. */
  toRevision?: number;
}

/**
 * Folds a session's stream straight from `store` and returns the record `get` would return for it (undefined
 * when the session does not exist): a replay that shares nothing with a running service. With `toRevision`, the
 * record as it was at that revision, folded from the stream's snapshot (a compacted revision is `invalid_request`).
 */
export async function replaySession(store: EventStore, id: string, options?: ReplayOptions): Promise<SessionRecord | undefined> {
  const stream = sessionStream(parseInput(sessionIdSchema, id, 'id'));
  const toRevision = options?.toRevision;
  try {
    const { state } = await foldStream(store, stream, sessionReducer, toRevision === undefined ? undefined : { toRevision });
    return state.record ? materialise(state.record, state) : undefined;
  } catch (error) {
    if (error instanceof InvalidInputError && error.field === 'toRevision') throw SessionHistoryError.invalid(error.message, 'toRevision');
    throw error instanceof SessionHistoryError ? error : SessionHistoryError.internal(error);
  }
}
