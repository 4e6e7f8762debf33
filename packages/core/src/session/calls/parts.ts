import type { EventStore, StreamId } from '../../kernel/port.js';
import type { CompletionSteps } from '../completion.js';
import type { Decision, DecisionOptions } from '../decisions.js';
import { SessionHistoryError } from '../errors.js';
import type { SessionEvent } from '../events.js';
import type { SessionRecord, SessionStreamState } from '../model.js';
import type { SessionProjection } from '../projection.js';
import type { StreamWriter } from '../stream-writer.js';
import { materialise } from '../view.js';
import type { ServiceCalls } from './call.js';

/** What the service's groups of methods work with. */
export interface ServiceParts {
  calls: ServiceCalls;
  store: EventStore;
  /** The writer of session streams. */
  sessions: StreamWriter<SessionStreamState, SessionEvent>;
  /** The cross-session view behind the lookups and listings. */
  projection: SessionProjection;
  /** The steps that finish a completed session. */
  completions: CompletionSteps;
  decisionOptions: DecisionOptions;
}

/** The decision a call makes on a session's state at the time `at`. */
export type SessionDecision = (state: SessionStreamState, at: Date) => Decision;

/** The materialised record of a session's state; `not_found` when its stream holds no session. */
export function recordOf<S>(state: SessionStreamState): SessionRecord<S> {
  if (!state.record) throw SessionHistoryError.notFound();
  return materialise<S>(state.record, state);
}

/** Decides `decide` on session stream `stream`, appends it, and answers with the session's record after it. */
export async function changeSession<S>(parts: ServiceParts, stream: StreamId, decide: SessionDecision): Promise<SessionRecord<S>> {
  return recordOf<S>((await parts.sessions.mutate(stream, decide)).state);
}

/** `changeSession` for a decision that completes the session, then the steps that finish the completion. */
export async function completeSession<S>(parts: ServiceParts, stream: StreamId, decide: SessionDecision): Promise<SessionRecord<S>> {
  const record = await changeSession<S>(parts, stream, decide);
  await parts.completions.finish(stream);
  return record;
}
