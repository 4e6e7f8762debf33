import type { EventStore, StreamId } from '../kernel/port.js';
import type { BackgroundCompaction, CompactionPolicy } from './compaction.js';
import { SessionHistoryError } from './errors.js';
import { SESSION_STREAM_PREFIX, sessionIdOfStream } from './ids.js';

/** Streams looked at per tick of the sweep, so that calls made meanwhile wait for a few compactions at most. */
const STREAMS_PER_TICK = 4;
/** The pause between two ticks, leaving the store to the calls. */
const TICK_PAUSE_MS = 20;

/**
 * The compaction an open starts: a stream that no write makes due again (a long session never written after an
 * upgrade, or written while compaction was off) would otherwise keep its whole history. In the background, after
 * the open, it lists the session streams long enough to be due and asks the service's compaction of each — the
 * same path as a write's, in the stream's queue and between catch-ups, whose snapshot covers only revisions the
 * stream holds, so a writer in another process loses nothing — a few per tick, on timers that keep no process
 * alive. Any session stream that exists is looked at, completed ones kept by the store included.
 */
export class OpenCompactionSweep {
  readonly #store: EventStore;
  readonly #compaction: BackgroundCompaction;
  readonly #policy: CompactionPolicy;
  readonly #failed: (error: SessionHistoryError, cause: unknown) => void;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #tick: Promise<void> = Promise.resolve();

  constructor(store: EventStore, compaction: BackgroundCompaction, policy: CompactionPolicy, failed: (error: SessionHistoryError, cause: unknown) => void) {
    this.#store = store;
    this.#compaction = compaction;
    this.#policy = policy;
    this.#failed = failed;
  }

  /** Starts the sweep on the next turn of the event loop. */
  start(): void {
    this.#schedule(0, async () => {
      const due = await this.#candidates();
      if (due !== undefined) this.#next(due, 0);
    });
  }

  /** Stops the sweep between two streams and resolves once the stream being compacted (if any) is done. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#tick;
  }

  /** Session streams whose revision alone could make them due (the snapshot is read per stream later); undefined once closed or failed. */
  async #candidates(): Promise<StreamId[] | undefined> {
    const due: StreamId[] = [];
    try {
      for await (const { stream, revision } of this.#store.streams({ prefix: SESSION_STREAM_PREFIX })) {
        if (this.#closed) return undefined;
        if (revision > this.#policy.everyEvents && sessionIdOfStream(stream) !== undefined) due.push(stream);
      }
    } catch (error) {
      if (!this.#closed) this.#failed(SessionHistoryError.internal(error), error);
      return undefined;
    }
    return this.#closed ? undefined : due;
  }

  #next(due: readonly StreamId[], from: number): void {
    if (from >= due.length) return;
    this.#schedule(from === 0 ? 0 : TICK_PAUSE_MS, async () => {
      const end = Math.min(from + STREAMS_PER_TICK, due.length);
      for (let index = from; index < end && !this.#closed; index++) await this.#compaction.compactIfDue(due[index] as StreamId);
      this.#next(due, end);
    });
  }

  #schedule(delayMs: number, task: () => Promise<void>): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#tick = task();
    }, delayMs);
    this.#timer.unref();
  }
}
