import { ConcurrencyError, InvalidInputError } from '../kernel/errors.js';
import { compactStreamKeeping } from '../kernel/fold.js';
import type { EventStore, StreamId } from '../kernel/port.js';
import { SessionHistoryError } from './errors.js';
import type { SessionEvent } from './events.js';
import type { SessionStreamState } from './model.js';
import { sessionReducer } from './reducer.js';
import type { SessionProjection } from './projection.js';
import type { StreamWriter } from './stream-writer.js';

/** When the service compacts a session stream by itself. */
export interface CompactionPolicy {
  /** Compact once a call leaves the stream with more than this many events beyond its snapshot. */
  everyEvents: number;
  /** The newest events a compaction keeps as events, so recent retries find their ids and a replay shows them. */
  keepEvents: number;
}

/** The default: compact every 1,000 events beyond the snapshot, keeping the newest 100. */
export const DEFAULT_COMPACTION_POLICY: CompactionPolicy = Object.freeze({ everyEvents: 1000, keepEvents: 100 });

/** What one background compaction did, or how it failed. */
export interface CompactionObservation {
  stream: StreamId;
  /** The snapshot's revision (on failure: the revision the stream had reached when the compaction was asked for). */
  revision: number;
  /** Events the snapshot replaced (0 on failure). */
  droppedEvents: number;
  durationMs: number;
  /** Why the compaction failed; the stream is left as it was, and compaction is tried again after `everyEvents` more. */
  error?: SessionHistoryError;
}

/** Parses the `compaction` option: `false`, or two whole numbers; undefined means the default. */
export function compactionPolicy(option: unknown): CompactionPolicy | false {
  if (option === undefined) return DEFAULT_COMPACTION_POLICY;
  if (option === false) return false;
  const wholeNumber = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;
  if (
    typeof option !== 'object' ||
    option === null ||
    !wholeNumber((option as CompactionPolicy).everyEvents) ||
    !wholeNumber((option as CompactionPolicy).keepEvents)
  ) {
    throw SessionHistoryError.invalid('compaction: expected false or { everyEvents, keepEvents } as whole numbers ≥ 0', 'compaction');
  }
  const { everyEvents, keepEvents } = option as CompactionPolicy;
  return Object.freeze({ everyEvents, keepEvents });
}

/**
 * Compacts session streams in the background after the writes that take them past the policy's threshold.
 * A compaction runs in its stream's queue (so one stream is never compacted twice at once in this process,
 * nor while this process deletes it) and between the projection's catch-ups, never fails a call, and one that lost a race to another process —
 * which compacted further, or deleted the stream — is harmless and ignored.
 */
export class BackgroundCompaction {
  readonly #store: EventStore;
  readonly #sessions: StreamWriter<SessionStreamState, SessionEvent>;
  readonly #policy: CompactionPolicy;
  readonly #report: (observation: CompactionObservation) => void;
  /** The snapshot revision of streams compacted (or tried) by this process: where the next count starts. */
  readonly #bases = new Map<StreamId, number>();
  readonly #running = new Map<StreamId, Promise<void>>();
  #closed = false;

  readonly #projection: SessionProjection;

  constructor(
    store: EventStore,
    writers: { sessions: StreamWriter<SessionStreamState, SessionEvent>; projection: SessionProjection },
    policy: CompactionPolicy,
    report: (observation: CompactionObservation) => void,
  ) {
    this.#store = store;
    this.#sessions = writers.sessions;
    this.#projection = writers.projection;
    this.#policy = policy;
    this.#report = report;
  }

  /** Tells that a write left session stream `stream` at `revision`; compacts it in the background if due. */
  written(stream: StreamId, revision: number): void {
    if (this.#closed || this.#running.has(stream) || revision - (this.#bases.get(stream) ?? 0) <= this.#policy.everyEvents) return;
    const run = this.#sessions
      .exclusive(stream, () => this.#projection.exclusive(() => this.#compact(stream, revision)))
      .finally(() => this.#running.delete(stream));
    this.#running.set(stream, run);
  }

  /**
   * Compacts session stream `stream` in the background if it holds more than `everyEvents` events beyond its
   * snapshot as stored now, whoever wrote them (the open's sweep asks so of streams no write of this process made
   * due). Resolves when that is done or found not needed; never rejects.
   */
  compactIfDue(stream: StreamId): Promise<void> {
    const running = this.#running.get(stream);
    if (this.#closed || running) return running ?? Promise.resolve();
    const run = this.#sessions.exclusive(stream, () => this.#projection.exclusive(() => this.#compact(stream, 0))).finally(() => this.#running.delete(stream));
    this.#running.set(stream, run);
    return run;
  }

  /** Stops starting compactions and resolves once those in flight have finished. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#running.values());
  }

  /** Compacts `stream`, which a write left at `revision`; with `revision` 0, only if the stream as stored is due. */
  async #compact(stream: StreamId, revision: number): Promise<void> {
    const started = performance.now();
    try {
      if (revision === 0) {
        revision = await this.#dueRevision(stream);
        if (revision === 0) return;
      }
      const done = await compactStreamKeeping(this.#store, stream, sessionReducer, this.#policy.keepEvents);
      if (done.revision === 0) this.#bases.delete(stream);
      else this.#bases.set(stream, done.revision);
      if (done.droppedEvents > 0) this.#report({ stream, revision: done.revision, droppedEvents: done.droppedEvents, durationMs: performance.now() - started });
    } catch (error) {
      if (lostRace(error)) return;
      // Not again before as many events as would make a compaction due anyway: a failing store is not hammered.
      this.#bases.set(stream, revision);
      const failure = error instanceof SessionHistoryError ? error : SessionHistoryError.internal(error);
      this.#report({ stream, revision, droppedEvents: 0, durationMs: performance.now() - started, error: failure });
    }
  }

  /** The stream's revision when it holds more than `everyEvents` events beyond its snapshot; 0 when it does not (or is gone). */
  async #dueRevision(stream: StreamId): Promise<number> {
    const read = await this.#store.read(stream);
    // Only the snapshot's revision is wanted: stopping the events lets the store release what the read holds open.
    for await (const _ of read.events) break;
    const snapshot = read.snapshot?.revision ?? 0;
    if (read.revision === 0) this.#bases.delete(stream);
    else this.#bases.set(stream, snapshot);
    return read.revision - snapshot > this.#policy.everyEvents ? read.revision : 0;
  }
}

/** Whether a compaction failed because another process changed the stream first: compacted further, or deleted it. */
function lostRace(error: unknown): boolean {
  return error instanceof ConcurrencyError || (error instanceof InvalidInputError && (error.field === 'snapshot.revision' || error.field === 'stream'));
}
