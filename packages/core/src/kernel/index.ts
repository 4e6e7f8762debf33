/**
 * The generic event-sourcing kernel any domain folds with: the `EventStore` port and its optional capabilities
 * (checkpoints, status, verify, follow), the typed errors, JSON values, the memory store, folding, versioned
 * reducers and copying. A store author's helpers (the shared validation, paged reads, the change feed) are in
 * `@sessionfold/core/store-kit`, which is not under semver.
 *
 * @module
 */

export {
  ConcurrencyError,
  CorruptionError,
  InvalidInputError,
  MissingMigrationError,
  SchemaVersionTooNewError,
  SessionfoldError,
  StorageError,
  StoreClosedError,
  StoreLockedError,
  UnsupportedFormatError,
  VersionedDataError,
  type VersionedLocation,
  type VersionedSubject,
} from './errors.js';
export type { JsonObject, JsonValue } from './json.js';
export {
  DELETED_RECORD,
  SNAPSHOT_RECORD,
  typedEventStore,
  type AppendResult,
  type CompleteEventStore,
  type DeletedRecord,
  type DisposableEventStore,
  type EventShape,
  type EventStore,
  type ExpectedRevision,
  type FeedRecord,
  type NewEvent,
  type RecordedEvent,
  type RecordedMetadata,
  type Snapshot,
  type SnapshotIdentity,
  type SnapshotRecord,
  type StoredEvent,
  type StoredStreamRead,
  type StreamId,
  type StreamRead,
} from './port.js';
export type {
  CheckpointData,
  CheckpointSlot,
  FollowOptions,
  HoldingTransaction,
  StoreStatus,
  VerifyCode,
  VerifyOptions,
  VerifyProblem,
  VerifyReport,
  VerifySeverity,
} from './capabilities.js';
export { memoryStore, type MemoryStoreOptions } from './memory-store.js';
export {
  compactStream,
  copyStore,
  foldStream,
  type AbortOptions,
  type CopyOptions,
  type CopyReport,
  type FoldedStream,
  type FoldOptions,
  type StreamReducer,
} from './fold.js';
export { prepareReducer, type EventUpcaster, type EventUpcasters, type PreparedReducer, type StateMigration } from './versioning.js';
export type { StoreObserver } from './observer.js';
