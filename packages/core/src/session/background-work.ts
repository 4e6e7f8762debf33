import type { FollowOptions } from '../kernel/capabilities.js';
import type { ObserverCall } from '../kernel/observer.js';
import type { EventStore, RecordedEvent, StreamId } from '../kernel/port.js';
import { BackgroundCompaction, type CompactionPolicy } from './compaction.js';
import type { SessionEvent } from './events.js';
import type { SessionStreamState } from './model.js';
import type { SessionHistoryObserver } from './observer.js';
import { OpenCompactionSweep } from './open-compaction.js';
import { SessionProjection } from './projection.js';
import { ProjectionCheckpoints, type CheckpointPolicy, type CheckpointReports } from './projection-checkpoints.js';
import { ProjectionFollower } from './projection-follower.js';
import type { StreamWriter } from './stream-writer.js';

/** What the background work is set to do. */
export interface BackgroundSettings {
  compaction: CompactionPolicy | false;
  checkpoints: CheckpointPolicy | false;
  /** Whether the projection follows the store's feed (where the store can). */
  follow: boolean;
  /** Loads checkpoints but saves none, and sweeps nothing for compaction at open. */
  readOnly: boolean;
}

/**
 * The service's work beside its calls: the cross-session projection with its checkpoints (loaded at open, saved as
 * changes are applied and at close), the follow of the store's feed, and the compaction of session streams (after
 * the writes that make it due, and by a sweep after the open). None of it ever fails a call.
 */
export class BackgroundWork {
  /** The cross-session view, fed by the store's change feed. */
  readonly projection: SessionProjection;
  readonly #checkpoints: ProjectionCheckpoints | undefined;
  readonly #compaction: BackgroundCompaction | undefined;
  readonly #sweep: OpenCompactionSweep | undefined;
  /** Starts the follow of the store's feed, when there is one to follow. */
  readonly #startFollowing: (() => ProjectionFollower) | undefined;
  #follower: ProjectionFollower | undefined;
  readonly #saveAtClose: boolean;

  constructor(
    store: EventStore,
    sessions: StreamWriter<SessionStreamState, SessionEvent>,
    settings: BackgroundSettings,
    observe: ObserverCall<SessionHistoryObserver>,
  ) {
    const { compaction, checkpoints, readOnly } = settings;
    const projection = new SessionProjection(store, (catchUp) => {
      observe('projectionCaughtUp', catchUp);
      this.#checkpoints?.applied(catchUp.changes);
    });
    this.projection = projection;
    const slot = store.checkpoints;
    const report: CheckpointReports = {
      loaded: (load) => observe('checkpointLoaded', load),
      ignored: (ignored) => observe('checkpointIgnored', ignored),
      saved: (save) => observe('checkpointSaved', save),
    };
    this.#checkpoints =
      checkpoints && slot ? new ProjectionCheckpoints(store, slot, projection, { policy: checkpoints, writable: !readOnly, report }) : undefined;
    this.#saveAtClose = this.#checkpoints !== undefined && !readOnly;
    if (compaction) {
      this.#compaction = new BackgroundCompaction(store, { sessions, projection }, compaction, (done) => observe('compaction', done));
      if (!readOnly) {
        this.#sweep = new OpenCompactionSweep(store, this.#compaction, compaction, (error, cause) =>
          observe('storageFailed', { error, cause, source: 'open-compaction' }),
        );
      }
    }
    const follow = store.follow;
    if (settings.follow && typeof follow === 'function') {
      const feed = (options: FollowOptions): AsyncIterable<RecordedEvent> => follow.call(store, options);
      this.#startFollowing = () => new ProjectionFollower(feed, projection, (error) => observe('followFailed', { error }));
    }
  }

  /** Tells that a write left session stream `stream` at `revision`: compacted in the background when that makes it due. */
  written(stream: StreamId, revision: number): void {
    this.#compaction?.written(stream, revision);
  }

  /** Builds the projection, from the checkpoint when one can be trusted, and the feed after it. */
  async open(): Promise<void> {
    await this.#checkpoints?.load();
    await this.projection.catchUp();
  }

  /** Starts the sweep of the streams due for compaction already, and the follow of the store's feed. */
  start(): void {
    this.#sweep?.start();
    this.#follower = this.#startFollowing?.();
  }

  /** Stops it all: the sweep, the follow, the catch-ups in flight and the compactions; then saves the last checkpoint. */
  async close(): Promise<void> {
    // Stopped first: the follower's close below may wait for a compaction the sweep asked for.
    const sweeping = this.#sweep?.close();
    if (this.#follower !== undefined) {
      await this.#follower.close();
      // The follow reads in gathered batches, so the last changes may not be applied yet; they are few, and the
      // checkpoint saved below should cover them.
      if (this.#saveAtClose) await this.projection.catchUp().catch(() => undefined);
    }
    // Catch-ups asked for by calls still in flight end between two records: what they applied is consistent, and
    // the last checkpoint covers it.
    this.projection.stop();
    await Promise.all([this.projection.idle(), sweeping, this.#compaction?.close()]);
    await this.#checkpoints?.close();
  }
}
