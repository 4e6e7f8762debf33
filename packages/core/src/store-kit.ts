/**
 * Helpers for writing a store: the shared validation every store runs before it touches anything, the change feed
 * a store's `follow` is built from, the row codecs and paged reads of the database stores, and the reads that hand
 * out the items they hold without a promise each. The shipped stores and `@sessionfold/conformance` are built on
 * them, and a store of your own may be.
 *
 * **Unstable: not under semver.** Any release, a patch included, may change or remove what this entry point
 * exports, so a store built on it depends on the exact version of `@sessionfold/core` it was tested with (the shipped
 * stores are released together with it). What a store implements (the `EventStore` port, its capabilities and
 * errors) is in `@sessionfold/core/kernel`, which is under semver.
 *
 * @module
 */

export { MAX_JSON_DEPTH, cloneJson, readJson } from './kernel/json.js';
export {
  DEFAULT_MAX_EVENT_BYTES,
  MAX_EVENT_SCHEMA_VERSION,
  STREAM_ID_PATTERN,
  isEventSchemaVersion,
  isReservedName,
  readClock,
  revisionMatches,
  snapshotJson,
  validateAppend,
  validateNewCheckpointName,
  validateNewStreamId,
  validateReadAllOptions,
  validateReadOptions,
  validateSha256,
  validateSignalOption,
  validateSnapshot,
  validateStreamId,
  validateStreamsOptions,
  validateWriteOptions,
  type ValidatedAppend,
  type ValidatedEvent,
  type ValidatedSnapshot,
} from './kernel/validate.js';
export { validateCheckpointData, validateCheckpointName } from './kernel/capabilities.js';
export { ChangeSignal, followFeed, validateFollowOptions, type FollowSource, type WakeReason } from './kernel/follow.js';
export {
  EVENT_ROW_COLUMN,
  PagedEvents,
  StreamPageRows,
  eventFromRow,
  storedEventFromRow,
  type EventRow,
  type NextPage,
  type PagedRead,
  type StreamPage,
  type StreamPageColumns,
  type StreamPageRow,
} from './kernel/paged-events.js';
export { forEachItem, type ReadyIterator } from './kernel/ready-items.js';
export { eventBytes, storeObserverOf, type ObserverCall } from './kernel/observer.js';
export { toStoredEvent } from './kernel/stored-events.js';
