import type { CheckpointSlot } from '../kernel/capabilities.js';
import type { EventStore, RecordedEvent } from '../kernel/port.js';
import { SessionHistoryError } from './errors.js';
import type { SessionProjection } from './projection.js';
import {
  PROJECTION_CHECKPOINT_NAME,
  decodeProjectionImage,
  encodeProjectionImage,
  type CheckpointIgnoredReason,
  type FeedMark,
  type ProjectionImage,
} from './projection-image.js';

/** When the service saves its projection in the store's checkpoint slot. */
export interface CheckpointPolicy {
  /**
   * Save after this many feed changes applied since the last save — or, when the projection holds more sessions
   * than that, after as many changes as it holds sessions, so the bytes written stay proportional to the changes.
   */
  everyChanges: number;
}

/** Changes applied between two saves, at least, per session the projection holds (see `applied`). */
const SAVE_CHANGES_PER_SESSION = 2;

/** The default: a save every 1,000 changes (more with more than 500 sessions), and one at `close()`. */
export const DEFAULT_CHECKPOINT_POLICY: CheckpointPolicy = Object.freeze({ everyChanges: 1000 });

/** Parses the `checkpoints` option: `false`, or `{ everyChanges }` (a whole number ≥ 1); undefined means the default. */
export function checkpointPolicy(option: unknown): CheckpointPolicy | false {
  if (option === undefined) return DEFAULT_CHECKPOINT_POLICY;
  if (option === false) return false;
  const everyChanges = typeof option === 'object' && option !== null ? (option as Partial<CheckpointPolicy>).everyChanges : undefined;
  if (!Number.isSafeInteger(everyChanges) || (everyChanges as number) < 1) {
    throw SessionHistoryError.invalid('checkpoints: expected false or { everyChanges } as a whole number ≥ 1', 'checkpoints');
  }
  return Object.freeze({ everyChanges: everyChanges as number });
}

/** A checkpoint the service started from. */
export interface CheckpointLoadObservation {
  /** The feed position it covers: the open read the feed from the next one. */
  position: number;
  /** Sessions it held. */
  sessions: number;
  /** Its size in bytes. */
  size: number;
  /** Time to load, check and restore it. */
  durationMs: number;
}

/** A checkpoint the service did not use (the projection was rebuilt from the feed), and why. */
export interface CheckpointIgnoredObservation {
  /** Why, as a stable string. */
  reason: CheckpointIgnoredReason;
  /** What was wrong, for a log. */
  message: string;
  /** The store's error, when loading the checkpoint or reading the feed failed (`unreadable`). */
  error?: SessionHistoryError;
}

/** A background save finished, or failed (`error` set: the previous checkpoint stays; the next save is tried later). */
export interface CheckpointSaveObservation {
  /** The feed position the checkpoint covers. */
  position: number;
  /** Sessions it holds. */
  sessions: number;
  /** Its size in bytes (0 when the save failed before it was serialised). */
  size: number;
  /** Time to serialise and save it. */
  durationMs: number;
  /** Why the save failed, the store's error as `cause`. */
  error?: SessionHistoryError;
}

/** Where checkpoint loads and saves are reported. */
export interface CheckpointReports {
  loaded(load: CheckpointLoadObservation): void;
  ignored(ignored: CheckpointIgnoredObservation): void;
  saved(save: CheckpointSaveObservation): void;
}

/**
 * The projection's checkpoints in a store's slot: loaded once at open (after checks against the store's id and
 * feed), saved in the background as changes are applied and once more at close. Nothing here ever fails a call:
 * a checkpoint that cannot be used is rebuilt from the feed, a failed save is reported and tried again later.
 */
export class ProjectionCheckpoints {
  readonly #store: EventStore;
  readonly #slot: CheckpointSlot;
  readonly #projection: SessionProjection;
  readonly #policy: CheckpointPolicy;
  readonly #writable: boolean;
  readonly #report: CheckpointReports;
  #storeId: string | undefined;
  /** Changes applied since the last save began. */
  #pending = 0;
  /** The position the slot is known to hold (-1: nothing usable). */
  #savedPosition = -1;
  #saving: Promise<void> | undefined;
  #closed = false;

  constructor(
    store: EventStore,
    slot: CheckpointSlot,
    projection: SessionProjection,
    options: { policy: CheckpointPolicy; writable: boolean; report: CheckpointReports },
  ) {
    this.#store = store;
    this.#slot = slot;
    this.#projection = projection;
    this.#policy = options.policy;
    this.#writable = options.writable;
    this.#report = options.report;
  }

  /** Restores the projection from the slot's checkpoint when it can be trusted; reports what it did either way. */
  async load(): Promise<void> {
    const started = performance.now();
    let data: Awaited<ReturnType<CheckpointSlot['load']>>;
    try {
      this.#storeId = await this.#slot.storeId();
      data = await this.#slot.load(PROJECTION_CHECKPOINT_NAME);
    } catch (error) {
      this.#report.ignored({ reason: 'unreadable', message: 'the checkpoint could not be loaded', error: SessionHistoryError.internal(error) });
      return;
    }
    if (data === undefined) {
      this.#report.ignored({ reason: 'missing', message: 'no checkpoint was saved in this store' });
      return;
    }
    const image = decodeProjectionImage(data, this.#storeId);
    const refused = 'reason' in image ? image : await this.#checkFeed(image);
    if (refused) {
      this.#report.ignored(refused);
      return;
    }
    const usable = image as ProjectionImage;
    this.#projection.restore(usable);
    this.#savedPosition = usable.position;
    const size = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
    this.#report.loaded({ position: usable.position, sessions: usable.sessions.length, size, durationMs: performance.now() - started });
  }

  /** Counts `changes` applied; starts a background save once enough have been. */
  applied(changes: number): void {
    this.#pending += changes;
    if (this.#closed || !this.#writable || this.#saving) return;
    // At most one session serialised per two changes, however many sessions: a save costs time in proportion to them.
    if (this.#pending < Math.max(this.#policy.everyChanges, SAVE_CHANGES_PER_SESSION * this.#projection.size())) return;
    this.#startSave();
  }

  /** Waits for a save in flight, then saves what the projection reached if the slot does not hold it yet. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#saving;
    if (this.#writable && this.#projection.position() !== this.#savedPosition) {
      this.#startSave();
      await this.#saving;
    }
  }

  #startSave(): void {
    this.#pending = 0;
    const saving = this.#save(this.#projection.image()).finally(() => {
      if (this.#saving === saving) this.#saving = undefined;
    });
    this.#saving = saving;
  }

  async #save(image: ProjectionImage): Promise<void> {
    const started = performance.now();
    let size = 0;
    try {
      this.#storeId ??= await this.#slot.storeId();
      const bytes = await encodeProjectionImage(image, this.#storeId);
      size = bytes.byteLength;
      await this.#slot.save(PROJECTION_CHECKPOINT_NAME, bytes);
      this.#savedPosition = Math.max(this.#savedPosition, image.position);
      this.#report.saved({ position: image.position, sessions: image.sessions.length, size, durationMs: performance.now() - started });
    } catch (error) {
      const failure = SessionHistoryError.internal(error);
      this.#report.saved({ position: image.position, sessions: image.sessions.length, size, durationMs: performance.now() - started, error: failure });
    }
  }

  /**
   * Whether the feed still holds what the checkpoint saw: a record at or after its position (the feed's last
   * record is never removed, since every compaction or deletion records itself at a new position), and when
   * the record at its position is still there, the same one. A store restored from an older copy fails this.
   */
  async #checkFeed(image: ProjectionImage): Promise<CheckpointIgnoredObservation | undefined> {
    if (image.position === 0) return undefined;
    let first: RecordedEvent | undefined;
    try {
      for await (const record of this.#store.readAll({ fromPosition: image.position })) {
        first = record;
        break;
      }
    } catch (error) {
      return { reason: 'unreadable', message: 'the feed could not be read', error: SessionHistoryError.internal(error) };
    }
    if (!first) return { reason: 'beyond_feed', message: `the checkpoint covers position ${image.position}, past the end of the store's feed` };
    if (first.position === image.position && !sameRecord(first, image.last)) {
      return { reason: 'other_history', message: `the feed's record at position ${image.position} is not the one the checkpoint saw` };
    }
    return undefined;
  }
}

function sameRecord(record: RecordedEvent, mark: FeedMark | null): boolean {
  return mark !== null && record.streamId === mark.streamId && record.revision === mark.revision && record.type === mark.type;
}
