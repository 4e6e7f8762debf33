import type { JsonObject, JsonValue } from './json.js';
import type { CheckpointSlot, FollowOptions, StoreStatus, VerifyOptions, VerifyReport } from './capabilities.js';

/** A stream name: safe as a file name on every platform we run on. */
export type StreamId = string;

/**
 * What an append or delete expects of the stream: a revision, `'no_stream'` (or 0: it does not exist now),
 * `'never_existed'` (it does not exist and was never deleted either: a name created once, whatever deleted it
 * since), or `'any'`.
 */
export type ExpectedRevision = number | 'no_stream' | 'never_existed' | 'any';

/**
 * The shape every event has: an application type and JSON data. An application may describe its events as a
 * union of these (`{ type: 'Deposited'; data: { amount: number } } | …`) and type a store, reducer or fold by it.
 */
export interface EventShape {
  /** Application event type; types starting with `$` are reserved for the change feed. */
  type: string;
  data: JsonValue;
}

/** An event as the application hands it to `append`: one of the events `E`, plus the optional id and version. */
export type NewEvent<E extends EventShape = EventShape> = E & {
  /** When set, appending the same id again is a no-op that returns the first result (idempotent retry). */
  eventId?: string;
  /**
   * Version of the shape of `data` for this `type`: an integer from 1 to `MAX_EVENT_SCHEMA_VERSION` (default 1).
   * A reducer's upcasters bring older versions to the newest before folding; stores keep it as given.
   */
  schemaVersion?: number;
};

/** What a store records with each event: its stream, 1-based revision in the stream and global position across streams. */
export interface RecordedMetadata {
  streamId: StreamId;
  eventId?: string;
  /** The version of `data`'s shape the event was appended with; 1 for events stored before versions existed. */
  schemaVersion: number;
  revision: number;
  position: number;
  /** ISO 8601 UTC time of the commit. */
  recordedAt: string;
}

/** An event as stored: one of the events `E` with what the store recorded about it. */
export type RecordedEvent<E extends EventShape = EventShape> = E & RecordedMetadata;

/** Says which reducer a snapshot's state belongs to; checked before the state is used. */
export interface SnapshotIdentity {
  stream: StreamId;
  /** The reducer's state-schema version; a reader with another version must not apply the state. */
  schemaVersion: number;
}

/** The folded state of a stream up to and including `revision`. */
export interface Snapshot {
  revision: number;
  state: JsonValue;
  identity: SnapshotIdentity;
}

/** Result of an append: revision and position of the batch's last event. */
export interface AppendResult {
  revision: number;
  position: number;
}

/** A consistent view of one stream: the snapshot (if any covers what was asked) and the events after it. */
export interface StreamRead<E extends EventShape = EventShape> {
  /** The stream's revision when the read began; 0 when the stream does not exist. */
  revision: number;
  snapshot?: Snapshot;
  events: AsyncIterable<RecordedEvent<E>>;
}

/**
 * An event or feed record with its data as JSON text instead of a value: `dataJson` is exactly what
 * `JSON.stringify` gives for the `data` that `read` or `readAll` returns, so it can be copied out unchanged.
 */
export type StoredEvent = RecordedMetadata & { type: string; dataJson: string };

/** `StreamRead` with each event as a `StoredEvent` (the snapshot stays a value). */
export interface StoredStreamRead extends Omit<StreamRead, 'events'> {
  events: AsyncIterable<StoredEvent>;
}

/** Reserved event types that appear only in `readAll`, so a consumer that was behind can still converge (schemaVersion 1). */
export const SNAPSHOT_RECORD = '$snapshot';
export const DELETED_RECORD = '$deleted';

/** The feed's record of a stream compacted or restored: its data is the stream's new snapshot. */
export interface SnapshotRecord extends RecordedMetadata {
  type: typeof SNAPSHOT_RECORD;
  // Also a JsonObject, so a record of the feed still reads as a plain `RecordedEvent`.
  data: Snapshot & JsonObject;
}

/** The feed's record of a stream deleted at `revision` (its data is null). */
export interface DeletedRecord extends RecordedMetadata {
  type: typeof DELETED_RECORD;
  data: null;
}

/** What `readAll` and `follow` yield: the events `E`, and the reserved records typed apart by their `type`. */
export type FeedRecord<E extends EventShape = EventShape> = RecordedEvent<E> | SnapshotRecord | DeletedRecord;

/**
 * `store` typed by the events the application keeps in it. Nothing is checked at run time: the store holds what was
 * appended, so this is the application's statement that every stream read through it holds only events `E`.
 */
export function typedEventStore<E extends EventShape>(store: EventStore): EventStore<E> {
  return store as unknown as EventStore<E>;
}

/**
 * The storage port every store implements (memory, file, SQLite, Postgres).
 * The conformance suite (`@sessionfold/conformance`) checks every rule stated here.
 *
 * Input, on every method: bad input is `InvalidInputError` before anything is touched, also when reading the
 * caller's objects throws (a getter, a Proxy, a `toJSON`). Each field of an argument is read once, and what was
 * validated is what is stored. Types and event ids are well-formed Unicode without U+0000, so every store keeps
 * them identically; event data and snapshot states are plain JSON nested at most `MAX_JSON_DEPTH` (256) levels
 * of arrays and objects. Options of the reads may be undefined or null (no options). A store's clock that fails
 * or returns an invalid `Date` makes the write `InvalidInputError` (field `clock`) before it writes anything.
 *
 * `E` is the application's event union (default: any type, any JSON data); stores implement the default, and
 * `typedEventStore` gives an application the view typed by its events.
 */
export interface EventStore<E extends EventShape = EventShape> {
  /**
   * Appends `events` atomically (all or none) if the stream is at `expectedRevision`, else rejects with
   * `ConcurrencyError` writing nothing. Resolves only once the batch is durable. A batch whose first
   * `eventId` is already in the stream resolves with that earlier append's result and writes nothing.
   */
  append(stream: StreamId, events: readonly NewEvent<E>[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;

  /**
   * Reads a stream from `fromRevision` (default 1): the snapshot when it covers `fromRevision`, then the events
   * after the snapshot (or from `fromRevision`) in revision order. A missing stream reads as revision 0, no events.
   */
  read(stream: StreamId, options?: { fromRevision?: number }): Promise<StreamRead<E>>;

  /**
   * Every committed change from `fromPosition` (inclusive, default 1) in position order: events, plus a
   * `$snapshot` record (data = the Snapshot) when a stream is compacted or restored and a `$deleted` record
   * when it is deleted. Never skips a committed change that a later reader could see.
   */
  readAll(options?: { fromPosition?: number }): AsyncIterable<FeedRecord<E>>;

  /** Existing streams (those with revision ≥ 1) in ascending name order, optionally only names starting with `prefix`. */
  streams(options?: { prefix?: string }): AsyncIterable<{ stream: StreamId; revision: number }>;

  /**
   * Atomically stores `snapshot` and drops the events it covers (revision ≤ snapshot.revision). Revisions keep
   * counting; `read` folds to the same state afterwards. Event ids of dropped events are forgotten. A snapshot
   * has exactly `revision`, `state` and `identity` (`stream`, `schemaVersion`); another member is refused.
   */
  compact(stream: StreamId, snapshot: Snapshot): Promise<void>;

  /** Creates a stream that does not exist yet from a snapshot taken elsewhere (copy, restore): revision = snapshot.revision. */
  restoreStream(stream: StreamId, snapshot: Snapshot): Promise<AppendResult>;

  /** Deletes the stream (events, snapshot, the blobs only it owns) if it is at `expectedRevision`; a missing stream is a no-op. */
  deleteStream(stream: StreamId, options: { expectedRevision: ExpectedRevision }): Promise<void>;

  /** Stores bytes owned by `stream`, durably, and returns their lowercase hex sha256. */
  putBlob(stream: StreamId, bytes: Uint8Array): Promise<string>;

  /** The bytes stored under `sha256` (verified against it), or undefined. */
  getBlob(sha256: string): Promise<Uint8Array | undefined>;

  /** The sha256 of every blob `stream` owns, ascending; each one can be read with `getBlob` (barring damage). */
  blobs(stream: StreamId): AsyncIterable<string>;

  /** Releases files, locks and connections. Later calls reject with `StoreClosedError`. */
  close(): Promise<void>;

  // Optional abilities: a store may leave any of them out; callers check for the member before using it.
  // `CompleteEventStore` is the port with every one of them there, as every store of this project has them.

  /** Checks everything stored without writing anything and lists the problems found; throws only when it cannot read at all. */
  verify?(options?: VerifyOptions): Promise<VerifyReport>;

  /** `readAll` that does not stop at the end: yields every later change once, in position order, until the signal fires or the store closes. */
  follow?(options?: FollowOptions): AsyncIterable<FeedRecord<E>>;

  /**
   * `read` with each event's data as the JSON text the store keeps: the same revision, snapshot and events, without
   * parsing the data only to have it serialized again (an export, a CLI printing JSON lines).
   */
  readStored?(stream: StreamId, options?: { fromRevision?: number }): Promise<StoredStreamRead>;

  /** `readAll` with each record's data as the JSON text the store keeps: the same records, in the same order. */
  readAllStored?(options?: { fromPosition?: number }): AsyncIterable<StoredEvent>;

  /** A store-local slot for projection checkpoints: outside every stream, the feed and `copyStore`, bound to this store's id. */
  readonly checkpoints?: CheckpointSlot;

  /**
   * The store's state for operators: the feed's last position, what holds writers or the feed back (a transaction
   * left open), and store-specific details (lock holder, sizes). For people and tools; `details` is not a contract.
   */
  status?(): Promise<StoreStatus>;
}

/**
 * A store as its factory returns it: the opener owns it and closes it, with `close()` or at the end of an
 * `await using` scope (`Symbol.asyncDispose` is `close`).
 */
export interface DisposableEventStore<E extends EventShape = EventShape> extends EventStore<E> {
  /** Closes the store, as `close()` does. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A store with every optional ability of the port: `verify`, `follow`, `readStored`, `readAllStored`,
 * `checkpoints` and `status`. Every store this project ships is one, and its factory says so in its type;
 * a caller that holds one uses these members without checking for them.
 */
export interface CompleteEventStore<E extends EventShape = EventShape> extends DisposableEventStore<E> {
  /** Checks everything stored without writing anything and lists the problems found; throws only when it cannot read at all. */
  verify(options?: VerifyOptions): Promise<VerifyReport>;
  /** `readAll` that does not stop at the end: yields every later change once, in position order, until the signal fires or the store closes. */
  follow(options?: FollowOptions): AsyncIterable<FeedRecord<E>>;
  /** `read` with each event's data as the JSON text the store keeps. */
  readStored(stream: StreamId, options?: { fromRevision?: number }): Promise<StoredStreamRead>;
  /** `readAll` with each record's data as the JSON text the store keeps: the same records, in the same order. */
  readAllStored(options?: { fromPosition?: number }): AsyncIterable<StoredEvent>;
  /** A store-local slot for projection checkpoints: outside every stream, the feed and `copyStore`, bound to this store's id. */
  readonly checkpoints: CheckpointSlot;
  /** The store's state for operators: the feed's last position, what holds writers or the feed back, store-specific details. */
  status(): Promise<StoreStatus>;
}
