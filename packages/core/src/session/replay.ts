import { foldStream } from '../kernel/fold.js';
import type { EventStore } from '../kernel/port.js';
import { SessionHistoryError } from './errors.js';
import { sessionStream } from './ids.js';
import { parseInput, sessionIdSchema } from './inputs.js';
import type { SessionRecord } from './model.js';
import { sessionReducer } from './reducer.js';
import { materialise } from './view.js';

/**
 * Folds a session's stream straight from `store` and returns the record `get` would return for it (undefined
 * when the session does not exist): a replay that shares nothing with a running service.
 */
export async function replaySession(store: EventStore, id: string): Promise<SessionRecord | undefined> {
  const stream = sessionStream(parseInput(sessionIdSchema, id, 'id'));
  try {
    const { state } = await foldStream(store, stream, sessionReducer);
    return state.record ? materialise(state.record, state) : undefined;
  } catch (error) {
    throw error instanceof SessionHistoryError ? error : SessionHistoryError.internal(error);
  }
}
