import { observerCaller, type ObserverCall } from '../kernel/observer.js';
import type { StreamId } from '../kernel/port.js';
import type { CompactionObservation } from './compaction.js';
import type { CatchUpObservation } from './projection.js';
import type { CheckpointIgnoredObservation, CheckpointLoadObservation, CheckpointSaveObservation } from './projection-checkpoints.js';
import { SessionHistoryError } from './errors.js';
import type { SessionEvent } from './events.js';

/**
 * Hooks an application plugs its logger or metrics into (`openSessionHistory({ observer })`); every hook is
 * optional. They are called synchronously as things happen; one that throws, or returns a promise that
 * rejects, is ignored — an observer never breaks a call. The service logs nothing by itself.
 */
export interface SessionHistoryObserver {
  /** An append is durable: `events` events of `calls` calls (decided together), leaving `stream` at `revision`. */
  appendCommitted?(append: { stream: StreamId; revision: number; events: number; calls: number; durationMs: number }): void;
  /** A background compaction finished (`droppedEvents` > 0), or failed (`error` set: the stream is left as it was). */
  compaction?(compaction: CompactionObservation): void;
  /** An append found `stream` changed by another process and is decided again; `attempt` counts from 1 per write. */
  conflictRetried?(conflict: { stream: StreamId; attempt: number }): void;
  /**
   * The cross-session projection applied `changes` feed records (its lag), reaching feed `position`: a catch-up a
   * call asked for (`source: 'catch-up'`), or records the store's `follow` pushed (`source: 'follow'`). This
   * service's own appends reach it the same way and are counted alike.
   */
  projectionCaughtUp?(catchUp: CatchUpObservation): void;
  /** The open started from the checkpoint saved at feed `position`, and read only the feed after it. */
  checkpointLoaded?(load: CheckpointLoadObservation): void;
  /** The open found no usable checkpoint (`reason` says why) and rebuilt the projection from the whole feed. */
  checkpointIgnored?(ignored: CheckpointIgnoredObservation): void;
  /** A checkpoint save finished, or failed (`error` set; the previous checkpoint stays, the next save comes later). */
  checkpointSaved?(save: CheckpointSaveObservation): void;
  /** Following the store's feed failed; it starts again from the projection's position a second later. */
  followFailed?(failure: { error: SessionHistoryError }): void;
  /** A `failIngress` call made the session's ingress fail for good (`ingress_failed`): see `IngressStoppedObservation`. */
  ingressStopped?(stopped: IngressStoppedObservation): void;
  /**
   * A call failed with `internal_error` (`source: 'call'`), or the open's sweep of streams due for compaction could
   * not list them (`'open-compaction'`); `cause` is what the store threw, which the error's message never shows.
   */
  storageFailed?(failure: { error: SessionHistoryError; cause: unknown; source: 'call' | 'open-compaction' }): void;
}

/** A terminal ingress failure, as `failIngress` recorded it. */
export interface IngressStoppedObservation {
  /** The session whose ingress stopped. */
  sessionId: string;
  /** The failed attempt (1-based), the one that reached the policy's limit unless the failure was not retryable. */
  attempt: number;
  /** The stage the caller named (null only in sessions imported without one). */
  stage: string | null;
  /** The failure's code, `ingress_error` when the caller gave none. */
  code: string;
  /** `non_retryable`: coded `input_too_large`, terminal at once; `retry_limit`: the policy's `failureLimit` was reached. */
  terminalReason: 'non_retryable' | 'retry_limit';
}

const HOOKS = [
  'appendCommitted',
  'compaction',
  'conflictRetried',
  'projectionCaughtUp',
  'checkpointLoaded',
  'checkpointIgnored',
  'checkpointSaved',
  'followFailed',
  'ingressStopped',
  'storageFailed',
] as const;

/** Checks the `observer` option and returns a caller of its hooks that never throws. */
export function observerOf(option: unknown): ObserverCall<SessionHistoryObserver> {
  try {
    return observerCaller<SessionHistoryObserver>(option, HOOKS);
  } catch {
    throw SessionHistoryError.invalid(`observer: expected an object whose hooks (${HOOKS.join(', ')}) are functions`, 'observer');
  }
}

/** The terminal ingress failures among `events` (decided by one `failIngress` call on session `sessionId`). */
export function ingressStops(sessionId: string, events: readonly SessionEvent[]): IngressStoppedObservation[] {
  const stops: IngressStoppedObservation[] = [];
  for (const event of events) {
    if (event.type !== 'IngressFailed' || !event.data.terminal) continue;
    const { attempt, stage, code } = event.data.failure;
    stops.push({
      sessionId,
      attempt,
      stage,
      code: code ?? 'ingress_error',
      terminalReason: code === 'input_too_large' ? 'non_retryable' : 'retry_limit',
    });
  }
  return stops;
}

/** Returns a pass-through for the errors a call rejects with that tells the observer of each `internal_error`. */
export function storageFailureReporter(observe: ObserverCall<SessionHistoryObserver>): (error: SessionHistoryError) => SessionHistoryError {
  return (error) => {
    if (error.code === 'internal_error') observe('storageFailed', { error, cause: error.cause, source: 'call' });
    return error;
  };
}
