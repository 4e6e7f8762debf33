import { InvalidInputError } from './errors.js';
import type { JsonValue } from './json.js';

/** How bad a problem `verify` found is: an error is damage or lost data; a warning is harmless leftover (a torn tail, an orphan). */
export type VerifySeverity = 'error' | 'warning';

/**
 * What kind of problem `verify` found. Stable strings a tool can match on:
 * - `damaged_record`: a record fails its own checks (checksum, JSON, fields, the stream it names)
 * - `revision_gap`: a stream's revisions are not 1-based and gap-free, or not in order
 * - `position_order`: positions in one stream do not increase
 * - `duplicate_position`: a position is used twice in the store
 * - `damaged_snapshot`: a snapshot fails its checks (checksum, envelope, identity)
 * - `blob_hash`: a blob's bytes do not match its sha256
 * - `blob_missing`: a stream owns a blob whose bytes are absent
 * - `blob_orphan`: bytes no stream owns (kept, never deleted by the store)
 * - `torn_tail`: bytes after the last complete record, cut by the next writer's open (never acknowledged)
 * - `index_mismatch`: an index the store keeps disagrees with the records it indexes
 * - `integrity_check`: the database engine's own check failed
 * - `unreadable`: a file or table could not be read
 * - `reserved_name`: a stream or checkpoint stored under a name no store creates any more (`isReservedName`)
 */
export type VerifyCode =
  | 'damaged_record'
  | 'revision_gap'
  | 'position_order'
  | 'duplicate_position'
  | 'damaged_snapshot'
  | 'blob_hash'
  | 'blob_missing'
  | 'blob_orphan'
  | 'torn_tail'
  | 'index_mismatch'
  | 'integrity_check'
  | 'unreadable'
  | 'reserved_name';

/** One problem `verify` found, with where it is: a file and 1-based line, or a table and key. */
export interface VerifyProblem {
  severity: VerifySeverity;
  code: VerifyCode;
  message: string;
  file?: string;
  line?: number;
  table?: string;
  key?: string;
}

/** What `verify` found. `ok` is true when no problem is an error (warnings allowed). */
export interface VerifyReport {
  ok: boolean;
  problems: VerifyProblem[];
  /** How much was checked, so "no problems" can be told from "nothing looked at". */
  checked: { streams: number; records: number; snapshots: number; blobs: number };
}

/** Options of `verify`. */
export interface VerifyOptions {
  /** Stops the check early: `verify` then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Options of `follow`. */
export interface FollowOptions {
  /** First position to yield (inclusive, default 1), as for `readAll`. */
  fromPosition?: number;
  /** Ends the iteration cleanly (it returns, never throws) once fired. */
  signal?: AbortSignal;
  /**
   * Whether the follow's waits for changes keep the process alive (default true, as an application awaiting
   * the next record expects). False for a follow in the background: a process with nothing else to do then
   * exits instead of waiting for changes nobody awaits.
   */
  keepAlive?: boolean;
}

/** What a checkpoint holds: bytes, or text; `load` returns the kind `save` was given. */
export type CheckpointData = Uint8Array | string;

/**
 * A store-local slot where projections keep checkpoints. Checkpoints are not events: they never appear in
 * `read`, `readAll`, `streams` or `follow`, and `copyStore` does not carry them.
 */
export interface CheckpointSlot {
  /** This store's identity: made when the store is created, the same across reopens, different for every other store. */
  storeId(): Promise<string>;
  /**
   * The data last saved under `name` in this store; undefined when none was, or when what is there was saved under
   * another store id (copied in from elsewhere). Damaged data rejects with `CorruptionError`: ignore it and rebuild.
   */
  load(name: string): Promise<CheckpointData | undefined>;
  /** Replaces `name`'s data atomically and durably: after a crash `load` returns the old data or the new, whole. */
  save(name: string, data: CheckpointData): Promise<void>;
}

/** A transaction that holds back a store's writers or its change feed (a database store's view of itself). */
export interface HoldingTransaction {
  /** Server process id of the session holding it (what `pg_terminate_backend` takes, on PostgreSQL). */
  pid: number;
  /** How long the transaction has been open, in milliseconds. */
  ageMs: number;
  /** The session's state as the server reports it, e.g. `idle in transaction`. */
  state: string;
  /** How many sessions are waiting for it. */
  waiting: number;
}

/** What `status()` reports; `details` has no fixed shape across stores. */
export interface StoreStatus {
  /** Which store: `file`, `sqlite`, `postgres`, … */
  kind: string;
  /** The change feed's last position (0 when nothing was ever written). */
  lastPosition: number;
  /** Open transactions holding back writers or the feed, oldest first; empty when nothing does. */
  holdingBack: HoldingTransaction[];
  /** Store-specific health for people and tools (lock holder, sizes). */
  details: Record<string, JsonValue>;
}

/** Checkpoint names follow the stream-id rule, so every store can keep them as file names or keys. */
export const CHECKPOINT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Checks a checkpoint's name before anything is touched. */
export function validateCheckpointName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !CHECKPOINT_NAME_PATTERN.test(name)) {
    throw new InvalidInputError('name', `a checkpoint name must match ${String(CHECKPOINT_NAME_PATTERN)}`);
  }
}

/** Checks checkpoint data: a `Uint8Array` or a string of well-formed Unicode. */
export function validateCheckpointData(data: unknown): asserts data is CheckpointData {
  if (data instanceof Uint8Array) return;
  if (typeof data !== 'string') throw new InvalidInputError('data', 'expected a Uint8Array or a string');
  if (!(data as string & { isWellFormed(): boolean }).isWellFormed()) throw new InvalidInputError('data', 'the string is not well-formed Unicode');
}
