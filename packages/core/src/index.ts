/**
 * What an application uses: the session service with its records, inputs and errors; the store port and its
 * errors; the memory store; folding, replaying and copying. The port's optional capabilities and versioned reducers
 * are in `@sessionfold/core/kernel`; the session domain's reducers, stream naming and schemas in
 * `@sessionfold/core/session`; a store author's helpers in `@sessionfold/core/store-kit` (not under semver).
 *
 * @mergeModuleWith <project>
 * @module
 */
// `@mergeModuleWith <project>`: the root entry point's names are documented on the package's own page
// (`@sessionfold/core`), beside its `kernel`, `session` and `store-kit` modules, instead of in a module without a name.

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
} from './kernel/errors.js';
export type { JsonObject, JsonValue } from './kernel/json.js';
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
  type SnapshotRecord,
  type Snapshot,
  type SnapshotIdentity,
  type StreamId,
  type StoredEvent,
  type StoredStreamRead,
  type StreamRead,
} from './kernel/port.js';
export { memoryStore, type MemoryStoreOptions } from './kernel/memory-store.js';
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
} from './kernel/fold.js';
export type { EventUpcaster, EventUpcasters, StateMigration } from './kernel/versioning.js';
export type { StoreObserver } from './kernel/observer.js';

export { openSessionHistory, type Created, type SessionHistory, type SessionHistoryOptions } from './session/service.js';
export { SessionHistoryError, type SessionHistoryErrorCode } from './session/errors.js';
export { replaySession, type ReplayOptions } from './session/replay.js';
export { LIST_SORT_KEYS, type ListQueryInput, type ListSortKey, type SessionListRow, type SessionPage } from './session/list-query.js';
export type { CompactionObservation, CompactionPolicy } from './session/compaction.js';
export type {
  CheckpointIgnoredObservation,
  CheckpointLoadObservation,
  CheckpointPolicy,
  CheckpointSaveObservation,
} from './session/projection-checkpoints.js';
export type { CheckpointIgnoredReason } from './session/projection-image.js';
export type { CatchUpObservation } from './session/projection.js';
export type { IngressPolicy } from './session/ingress-policy.js';
export type { IngressStoppedObservation, SessionHistoryObserver } from './session/observer.js';
export type { StoredObject } from './session/view.js';
export type { DataValidator } from './session/data.js';
export type {
  CommandStatus,
  CompletionReceipt,
  DataInput,
  IngressFailureEntry,
  LifecycleRecord,
  LogEntry,
  LogRole,
  Phase,
  SessionCommand,
  SessionRecord,
  SessionState,
  SessionSummary,
  SessionSummaryState,
  StagedObject,
  TranscriptEntry,
} from './session/types.js';
export type {
  AppendTranscriptInput,
  CheckpointInput,
  ClaimCommandInput,
  CommandOutcomeInput,
  ExpectedVersionInput,
  IngressFailureInput,
  ListOptionsInput,
  NewCommandInput,
  NewObjectInput,
  RecordCompletionInput,
  RegisterSessionInput,
  RetryIngressInput,
  StartIngressInput,
  StartSessionInput,
} from './session/inputs.js';
