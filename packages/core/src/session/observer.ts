import { observerCaller, type ObserverCall } from '../kernel/observer.js';
import type { StreamId } from '../kernel/port.js';
import type { CompactionObservation } from './compaction.js';
import type { CatchUpObservation } from './projection.js';
import type { CheckpointIgnoredObservation, CheckpointLoadObservation, CheckpointSaveObservation } from './projection-checkpoints.js';
import { SessionHistoryError } from './errors.js';

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
   * service's own appends, taken as they commit, are not counted: they were never behind.
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
] as const;

/** Checks the `observer` option and returns a caller of its hooks that never throws. */
export function observerOf(option: unknown): ObserverCall<SessionHistoryObserver> {
  try {
    return observerCaller<SessionHistoryObserver>(option, HOOKS);
  } catch {
    throw SessionHistoryError.invalid(`observer: expected an object whose hooks (${HOOKS.join(', ')}) are functions`, 'observer');
  }
}
