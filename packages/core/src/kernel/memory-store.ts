import { createHash } from 'node:crypto';
import { validateCheckpointData, validateCheckpointName, type CheckpointData, type VerifyReport } from './capabilities.js';
import { ConcurrencyError, InvalidInputError, StoreClosedError } from './errors.js';
import { ChangeSignal, followFeed, validateFollowOptions } from './follow.js';
import { cloneJson, type JsonValue } from './json.js';
import { storedEvents } from './stored-events.js';
import {
  DELETED_RECORD,
  SNAPSHOT_RECORD,
  type AppendResult,
  type CompleteEventStore,
  type RecordedEvent,
  type Snapshot,
  type StreamId,
  type StreamRead,
} from './port.js';
import {
  DEFAULT_MAX_EVENT_BYTES,
  readClock,
  revisionMatches,
  snapshotJson,
  validateAppend,
  validateReadAllOptions,
  validateReadOptions,
  validateSha256,
  validateSnapshot,
  validateNewCheckpointName,
  validateNewStreamId,
  validateStreamId,
  validateStreamsOptions,
  validateWriteOptions,
  type ValidatedEvent,
  type ValidatedSnapshot,
} from './validate.js';

/** Options of `memoryStore`. */
export interface MemoryStoreOptions {
  /** Source of `recordedAt` (default: the system clock). */
  clock?: () => Date;
  /** Largest serialized event in bytes (default 1 MiB). */
  maxEventBytes?: number;
  /** The id `checkpoints.storeId()` returns (default: `memory-<n>`, n counting the memory stores made in this process). */
  storeId?: string;
}

/** Numbers the memory stores of this process, so each has its own id without a source of randomness. */
let memoryStores = 0;

/** Nothing else writes a memory store, so a follow waits only for this store's own commits; the timer is a safety net. */
const MEMORY_FOLLOW_POLL_MS = 1000;

interface StreamState {
  revision: number;
  snapshot: Snapshot | undefined;
  events: RecordedEvent[];
  /** eventId → result of the append that carried it (only for events still in `events`). */
  eventIds: Map<string, AppendResult>;
}

/**
 * An `EventStore` held in memory: nothing survives the process. It is the reference model of the port —
 * written to be obviously correct, not fast — and the store of tests and examples.
 */
export function memoryStore(options: MemoryStoreOptions = {}): CompleteEventStore {
  const clock = options.clock ?? (() => new Date());
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const streams = new Map<StreamId, StreamState>();
  /** The change feed in position order; compacted and deleted events are removed from it. */
  let feed: RecordedEvent[] = [];
  const blobs = new Map<string, Uint8Array>();
  const owners = new Map<string, Set<StreamId>>();
  let lastPosition = 0;
  let closed = false;
  const changes = new ChangeSignal();
  const storeId = options.storeId ?? `memory-${++memoryStores}`;
  const checkpoints = new Map<string, CheckpointData>();
  const copyData = (data: CheckpointData): CheckpointData => (typeof data === 'string' ? data : Uint8Array.from(data));

  const open = () => {
    if (closed) throw new StoreClosedError('memory store');
  };
  const revisionOf = (stream: StreamId) => streams.get(stream)?.revision ?? 0;
  /** Streams deleted at some time: `'never_existed'` refuses them. */
  const deleted = new Set<StreamId>();
  const copy = (event: RecordedEvent): RecordedEvent => ({ ...event, data: cloneJson(event.data) });
  // The commit time is read before anything changes: a clock that fails leaves the store as it was.
  const feedRecord = (stream: StreamId, type: string, revision: number, data: JsonValue, recordedAt: string): RecordedEvent => ({
    streamId: stream,
    type,
    data,
    schemaVersion: 1,
    revision,
    position: ++lastPosition,
    recordedAt,
  });

  async function* iterate(events: RecordedEvent[]): AsyncIterable<RecordedEvent> {
    for (const event of events) yield copy(event);
  }

  const readFeed = (from: number): AsyncIterable<RecordedEvent> => {
    open();
    // The feed is in position order: find the start by bisection so a caught-up reader pays nothing.
    let low = 0;
    let high = feed.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((feed[middle] as RecordedEvent).position < from) low = middle + 1;
      else high = middle;
    }
    return iterate(feed.slice(low));
  };

  const store: CompleteEventStore = {
    async append(stream, events, appendOptions) {
      open();
      // Only what validation read is used from here on: the caller's objects are not looked at again.
      const batch = validateAppend(stream, events, appendOptions, maxEventBytes);
      const state = streams.get(stream);
      const first = batch.events[0] as ValidatedEvent;
      const earlier = first.eventId === undefined ? undefined : state?.eventIds.get(first.eventId);
      if (earlier) return { ...earlier };
      batch.events.forEach((event, index) => {
        if (index > 0 && event.eventId !== undefined && state?.eventIds.has(event.eventId)) {
          throw new InvalidInputError(`events[${index}].eventId`, `${JSON.stringify(event.eventId)} is already in stream ${stream}`);
        }
      });
      const actual = state?.revision ?? 0;
      const expected = batch.expectedRevision;
      if (!revisionMatches(expected, actual, deleted.has(stream))) throw new ConcurrencyError(stream, expected, actual);
      const target: StreamState = state ?? { revision: 0, snapshot: undefined, events: [], eventIds: new Map() };
      const recordedAt = readClock(clock);
      const recorded = batch.events.map(
        (event, index): RecordedEvent => ({
          streamId: stream,
          type: event.type,
          data: JSON.parse(event.dataJson) as JsonValue,
          ...(event.eventId === undefined ? {} : { eventId: event.eventId }),
          schemaVersion: event.schemaVersion,
          revision: actual + index + 1,
          position: lastPosition + index + 1,
          recordedAt,
        }),
      );
      const last = recorded[recorded.length - 1] as RecordedEvent;
      const result = { revision: last.revision, position: last.position };
      lastPosition = last.position;
      target.revision = last.revision;
      target.events.push(...recorded);
      for (const event of recorded) if (event.eventId !== undefined) target.eventIds.set(event.eventId, result);
      streams.set(stream, target);
      feed.push(...recorded);
      changes.notify();
      return { ...result };
    },

    async read(stream, readOptions): Promise<StreamRead> {
      open();
      validateStreamId(stream);
      const from = validateReadOptions(readOptions);
      const state = streams.get(stream);
      if (!state) return { revision: 0, events: iterate([]) };
      const snapshot = state.snapshot && state.snapshot.revision >= from ? cloneJson(state.snapshot) : undefined;
      const after = snapshot ? snapshot.revision + 1 : from;
      return {
        revision: state.revision,
        ...(snapshot ? { snapshot } : {}),
        events: iterate(state.events.filter((event) => event.revision >= after)),
      };
    },

    readAll(readOptions) {
      open();
      return readFeed(validateReadAllOptions(readOptions));
    },

    async readStored(stream, readOptions) {
      const read = await this.read(stream, readOptions);
      return { ...read, events: storedEvents(read.events) };
    },

    readAllStored(readOptions) {
      return storedEvents(this.readAll(readOptions));
    },

    async *streams(listOptions) {
      open();
      const prefix = validateStreamsOptions(listOptions);
      const names = [...streams.keys()].filter((name) => name.startsWith(prefix)).sort();
      for (const name of names) yield { stream: name, revision: revisionOf(name) };
    },

    async compact(stream, snapshot) {
      open();
      const validated = validateSnapshot(stream, snapshot);
      const state = streams.get(stream);
      if (!state) throw new InvalidInputError('stream', `stream ${stream} does not exist`);
      if (validated.revision > state.revision) {
        throw new InvalidInputError('snapshot.revision', `revision ${validated.revision} is past the stream's revision ${state.revision}`);
      }
      if (state.snapshot && validated.revision < state.snapshot.revision) {
        throw new InvalidInputError('snapshot.revision', `revision ${validated.revision} is older than the stored snapshot's ${state.snapshot.revision}`);
      }
      const recordedAt = readClock(clock);
      const kept = keptSnapshot(validated);
      state.snapshot = kept;
      const dropped = state.events.filter((event) => event.revision <= kept.revision);
      state.events = state.events.filter((event) => event.revision > kept.revision);
      for (const event of dropped) if (event.eventId !== undefined) state.eventIds.delete(event.eventId);
      feed = feed.filter(
        (record) => record.streamId !== stream || (record.type !== SNAPSHOT_RECORD && record.revision > kept.revision) || record.type === DELETED_RECORD,
      );
      feed.push(feedRecord(stream, SNAPSHOT_RECORD, kept.revision, cloneJson(kept) as unknown as JsonValue, recordedAt));
      changes.notify();
    },

    async restoreStream(stream, snapshot) {
      open();
      validateNewStreamId(stream);
      const validated = validateSnapshot(stream, snapshot);
      const actual = revisionOf(stream);
      if (actual !== 0) throw new ConcurrencyError(stream, 'no_stream', actual);
      const recordedAt = readClock(clock);
      const kept = keptSnapshot(validated);
      streams.set(stream, { revision: kept.revision, snapshot: kept, events: [], eventIds: new Map() });
      const record = feedRecord(stream, SNAPSHOT_RECORD, kept.revision, cloneJson(kept) as unknown as JsonValue, recordedAt);
      feed.push(record);
      changes.notify();
      return { revision: kept.revision, position: record.position };
    },

    async deleteStream(stream, deleteOptions) {
      open();
      validateStreamId(stream);
      const expected = validateWriteOptions(deleteOptions);
      const actual = revisionOf(stream);
      if (!revisionMatches(expected, actual, deleted.has(stream))) throw new ConcurrencyError(stream, expected, actual);
      if (actual === 0) return;
      const recordedAt = readClock(clock);
      streams.delete(stream);
      deleted.add(stream);
      feed = feed.filter((record) => record.streamId !== stream);
      feed.push(feedRecord(stream, DELETED_RECORD, actual, null, recordedAt));
      changes.notify();
      for (const [sha, streamsOwning] of owners) {
        if (!streamsOwning.delete(stream) || streamsOwning.size > 0) continue;
        owners.delete(sha);
        blobs.delete(sha);
      }
    },

    async putBlob(stream, bytes) {
      open();
      validateStreamId(stream);
      if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
      const sha = createHash('sha256').update(bytes).digest('hex');
      blobs.set(sha, Uint8Array.from(bytes));
      owners.set(sha, (owners.get(sha) ?? new Set()).add(stream));
      return sha;
    },

    async getBlob(sha256) {
      open();
      validateSha256(sha256);
      const bytes = blobs.get(sha256);
      return bytes ? Uint8Array.from(bytes) : undefined;
    },

    async *blobs(stream) {
      open();
      validateStreamId(stream);
      const owned = [...owners]
        .filter(([, set]) => set.has(stream))
        .map(([sha]) => sha)
        .sort();
      yield* owned;
    },

    // Everything is checked as it is written and nothing can damage it afterwards: the check is a count.
    async verify(verifyOptions): Promise<VerifyReport> {
      open();
      verifyOptions?.signal?.throwIfAborted();
      let snapshots = 0;
      for (const state of streams.values()) if (state.snapshot) snapshots++;
      const records = [...streams.values()].reduce((sum, state) => sum + state.events.length, 0);
      return { ok: true, problems: [], checked: { streams: streams.size, records, snapshots, blobs: blobs.size } };
    },

    follow(followOptions) {
      open();
      const { fromPosition, signal, keepAlive } = validateFollowOptions(followOptions);
      return followFeed({ readAll: readFeed, changes, pollMs: MEMORY_FOLLOW_POLL_MS }, fromPosition, signal, keepAlive);
    },

    checkpoints: {
      async storeId() {
        open();
        return storeId;
      },
      async load(name) {
        open();
        validateCheckpointName(name);
        const data = checkpoints.get(name);
        return data === undefined ? undefined : copyData(data);
      },
      async save(name, data) {
        open();
        validateNewCheckpointName(name);
        validateCheckpointData(data);
        checkpoints.set(name, copyData(data));
      },
    },

    // Nothing outside this object writes it, so nothing ever holds it back.
    async status() {
      open();
      return { kind: 'memory', lastPosition, holdingBack: [], details: { streams: streams.size, blobs: blobs.size } };
    },

    async close() {
      closed = true;
      changes.close();
    },

    [Symbol.asyncDispose]: () => store.close(),
  };
  return store;
}

/** The snapshot as a store that keeps JSON text gives it back (so `-0` reads as `0`, like every persistent store). */
function keptSnapshot(snapshot: ValidatedSnapshot): Snapshot {
  return JSON.parse(snapshotJson(snapshot)) as Snapshot;
}
