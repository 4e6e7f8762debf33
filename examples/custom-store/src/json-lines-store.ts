import { createHash } from 'node:crypto';
import { closeSync, fdatasyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  type AppendResult,
  ConcurrencyError,
  CorruptionError,
  DELETED_RECORD,
  type EventStore,
  InvalidInputError,
  type JsonValue,
  type RecordedEvent,
  SNAPSHOT_RECORD,
  type Snapshot,
  StorageError,
  StoreClosedError,
  type StreamId,
  type StreamRead,
} from '@sessionfold/core/kernel';
import {
  DEFAULT_MAX_EVENT_BYTES,
  cloneJson,
  readClock,
  revisionMatches,
  snapshotJson,
  type ValidatedEvent,
  validateAppend,
  validateNewStreamId,
  validateReadAllOptions,
  validateReadOptions,
  validateSha256,
  validateSnapshot,
  validateStreamId,
  validateStreamsOptions,
  validateWriteOptions,
} from '@sessionfold/core/store-kit';

/** Options of `jsonLinesStore`. */
export interface JsonLinesStoreOptions {
  /** The journal file; created (with its directory) on the first open. */
  file: string;
  /** Largest serialized event in bytes (default 1 MiB). */
  maxEventBytes?: number;
  /** Source of `recordedAt` (default: the system clock). */
  clock?: () => Date;
}

/** One line of the journal: a change as it was decided, with everything needed to apply it again on open. */
type Change =
  | { kind: 'append'; stream: StreamId; recordedAt: string; events: StoredEvent[] }
  | { kind: 'compact' | 'restore'; stream: StreamId; recordedAt: string; snapshot: Snapshot }
  | { kind: 'delete'; stream: StreamId; recordedAt: string }
  | { kind: 'blob'; stream: StreamId; sha256: string; base64: string };

interface StoredEvent {
  type: string;
  data: JsonValue;
  eventId?: string;
  schemaVersion: number;
}

interface StreamState {
  revision: number;
  snapshot: Snapshot | undefined;
  events: RecordedEvent[];
  /** eventId → result of the append that carried it (only for events still in `events`). */
  eventIds: Map<string, AppendResult>;
}

/**
 * An `EventStore` over one append-only file of JSON lines, each prefixed with the sha256 of its JSON. Every change
 * is a line; opening the file applies the lines again to rebuild the state in memory. One process at a time.
 */
export function jsonLinesStore(options: JsonLinesStoreOptions): EventStore {
  const { file } = options;
  const clock = options.clock ?? (() => new Date());
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const state = new StoreState();
  const journal = Journal.open(file, (change) => state.apply(change));
  let closed = false;

  const open = () => {
    if (closed) throw new StoreClosedError(`json-lines store ${file}`);
  };
  // Write first, then apply: what a read can see is always already durable.
  const commit = (change: Change) => {
    journal.write(change);
    return state.apply(change);
  };

  return {
    async append(stream, events, appendOptions) {
      open();
      // The kernel's validation reads each input once; only what it returned is used from here on.
      const batch = validateAppend(stream, events, appendOptions, maxEventBytes);
      const current = state.streams.get(stream);
      const first = batch.events[0] as ValidatedEvent;
      const earlier = first.eventId === undefined ? undefined : current?.eventIds.get(first.eventId);
      if (earlier) return { ...earlier };
      batch.events.forEach((event, index) => {
        if (index > 0 && event.eventId !== undefined && current?.eventIds.has(event.eventId)) {
          throw new InvalidInputError(`events[${index}].eventId`, `${JSON.stringify(event.eventId)} is already in stream ${stream}`);
        }
      });
      const actual = current?.revision ?? 0;
      if (!revisionMatches(batch.expectedRevision, actual, state.deleted.has(stream))) throw new ConcurrencyError(stream, batch.expectedRevision, actual);
      const stored = batch.events.map(
        (event): StoredEvent => ({
          type: event.type,
          data: JSON.parse(event.dataJson) as JsonValue,
          ...(event.eventId === undefined ? {} : { eventId: event.eventId }),
          schemaVersion: event.schemaVersion,
        }),
      );
      return commit({ kind: 'append', stream, recordedAt: readClock(clock), events: stored }) as AppendResult;
    },

    async read(stream, readOptions): Promise<StreamRead> {
      open();
      validateStreamId(stream);
      const from = validateReadOptions(readOptions);
      const current = state.streams.get(stream);
      if (!current) return { revision: 0, events: copies([]) };
      const snapshot = current.snapshot && current.snapshot.revision >= from ? cloneJson(current.snapshot) : undefined;
      const after = snapshot ? snapshot.revision + 1 : from;
      // `filter` takes the list as it is now, so events appended while the caller iterates are not in this read.
      const events = current.events.filter((event) => event.revision >= after);
      return { revision: current.revision, ...(snapshot ? { snapshot } : {}), events: copies(events) };
    },

    readAll(readOptions) {
      open();
      const from = validateReadAllOptions(readOptions);
      return copies(state.feed.filter((record) => record.position >= from));
    },

    async *streams(listOptions) {
      open();
      const prefix = validateStreamsOptions(listOptions);
      const names = [...state.streams.keys()].filter((name) => name.startsWith(prefix)).sort();
      for (const name of names) yield { stream: name, revision: state.streams.get(name)?.revision ?? 0 };
    },

    async compact(stream, snapshot) {
      open();
      const validated = validateSnapshot(stream, snapshot);
      const current = state.streams.get(stream);
      if (!current) throw new InvalidInputError('stream', `stream ${stream} does not exist`);
      if (validated.revision > current.revision) {
        throw new InvalidInputError('snapshot.revision', `revision ${validated.revision} is past the stream's revision ${current.revision}`);
      }
      if (current.snapshot && validated.revision < current.snapshot.revision) {
        throw new InvalidInputError('snapshot.revision', `revision ${validated.revision} is older than the stored snapshot's ${current.snapshot.revision}`);
      }
      const kept = JSON.parse(snapshotJson(validated)) as Snapshot;
      commit({ kind: 'compact', stream, recordedAt: readClock(clock), snapshot: kept });
    },

    async restoreStream(stream, snapshot) {
      open();
      // A restore creates the stream, so a name no store creates any more is refused first.
      validateNewStreamId(stream);
      const validated = validateSnapshot(stream, snapshot);
      const actual = state.streams.get(stream)?.revision ?? 0;
      if (actual !== 0) throw new ConcurrencyError(stream, 'no_stream', actual);
      const kept = JSON.parse(snapshotJson(validated)) as Snapshot;
      return commit({ kind: 'restore', stream, recordedAt: readClock(clock), snapshot: kept }) as AppendResult;
    },

    async deleteStream(stream, deleteOptions) {
      open();
      validateStreamId(stream);
      const expected = validateWriteOptions(deleteOptions);
      const actual = state.streams.get(stream)?.revision ?? 0;
      if (!revisionMatches(expected, actual, state.deleted.has(stream))) throw new ConcurrencyError(stream, expected, actual);
      if (actual === 0) return;
      commit({ kind: 'delete', stream, recordedAt: readClock(clock) });
    },

    async putBlob(stream, bytes) {
      open();
      validateStreamId(stream);
      if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
      const copy = Uint8Array.from(bytes);
      const sha256 = sha256Hex(copy);
      if (!state.blobs.get(sha256)?.owners.has(stream)) {
        commit({ kind: 'blob', stream, sha256, base64: Buffer.from(copy).toString('base64') });
      }
      return sha256;
    },

    async getBlob(sha256) {
      open();
      validateSha256(sha256);
      const blob = state.blobs.get(sha256);
      return blob ? Uint8Array.from(blob.bytes) : undefined;
    },

    async *blobs(stream) {
      open();
      validateStreamId(stream);
      yield* [...state.blobs]
        .filter(([, blob]) => blob.owners.has(stream))
        .map(([sha256]) => sha256)
        .sort();
    },

    async close() {
      if (closed) return;
      closed = true;
      journal.close();
    },
  };
}

/**
 * The state the journal's lines add up to. `apply` is the only code that changes it, used both for a new change
 * and for each line read on open, so a reopened store is exactly the store that was closed.
 */
class StoreState {
  readonly streams = new Map<StreamId, StreamState>();
  /** The change feed in position order; compacted and deleted events leave it. */
  feed: RecordedEvent[] = [];
  readonly blobs = new Map<string, { bytes: Uint8Array; owners: Set<StreamId> }>();
  /** Streams deleted at some time, which `'never_existed'` refuses (rebuilt from the journal's delete lines). */
  readonly deleted = new Set<StreamId>();
  #lastPosition = 0;

  apply(change: Change): AppendResult | undefined {
    switch (change.kind) {
      case 'append': {
        const current: StreamState = this.streams.get(change.stream) ?? { revision: 0, snapshot: undefined, events: [], eventIds: new Map() };
        const recorded = change.events.map(
          (event, index): RecordedEvent => ({
            streamId: change.stream,
            ...event,
            revision: current.revision + index + 1,
            position: this.#lastPosition + index + 1,
            recordedAt: change.recordedAt,
          }),
        );
        const last = recorded[recorded.length - 1] as RecordedEvent;
        const result = { revision: last.revision, position: last.position };
        this.#lastPosition = last.position;
        current.revision = last.revision;
        current.events.push(...recorded);
        for (const event of recorded) if (event.eventId !== undefined) current.eventIds.set(event.eventId, result);
        this.streams.set(change.stream, current);
        this.feed.push(...recorded);
        return { ...result };
      }
      case 'compact': {
        const current = this.streams.get(change.stream) as StreamState;
        const covered = change.snapshot.revision;
        current.snapshot = change.snapshot;
        for (const event of current.events) if (event.revision <= covered && event.eventId !== undefined) current.eventIds.delete(event.eventId);
        current.events = current.events.filter((event) => event.revision > covered);
        // The feed keeps the stream's `$deleted` record and its events after the snapshot; the new `$snapshot` replaces the old.
        this.feed = this.feed.filter(
          (record) => record.streamId !== change.stream || record.type === DELETED_RECORD || (record.type !== SNAPSHOT_RECORD && record.revision > covered),
        );
        this.#record(change.stream, SNAPSHOT_RECORD, covered, change.snapshot as unknown as JsonValue, change.recordedAt);
        return undefined;
      }
      case 'restore': {
        const revision = change.snapshot.revision;
        this.streams.set(change.stream, { revision, snapshot: change.snapshot, events: [], eventIds: new Map() });
        const position = this.#record(change.stream, SNAPSHOT_RECORD, revision, change.snapshot as unknown as JsonValue, change.recordedAt);
        return { revision, position };
      }
      case 'delete': {
        const revision = this.streams.get(change.stream)?.revision ?? 0;
        this.streams.delete(change.stream);
        this.deleted.add(change.stream);
        this.feed = this.feed.filter((record) => record.streamId !== change.stream);
        this.#record(change.stream, DELETED_RECORD, revision, null, change.recordedAt);
        for (const [sha256, blob] of this.blobs) {
          if (blob.owners.delete(change.stream) && blob.owners.size === 0) this.blobs.delete(sha256);
        }
        return undefined;
      }
      case 'blob': {
        const blob = this.blobs.get(change.sha256) ?? { bytes: Buffer.from(change.base64, 'base64'), owners: new Set() };
        blob.owners.add(change.stream);
        this.blobs.set(change.sha256, blob);
        return undefined;
      }
    }
  }

  #record(stream: StreamId, type: string, revision: number, data: JsonValue, recordedAt: string): number {
    const position = ++this.#lastPosition;
    this.feed.push({ streamId: stream, type, data, schemaVersion: 1, revision, position, recordedAt });
    return position;
  }
}

/** The file: `<sha256 of the JSON> <JSON>\n` per change, appended and synced before the change counts. */
class Journal {
  readonly #file: string;
  readonly #fd: number;
  #size: number;
  /** Set when a failed write could not be cut off again: the file's end is unknown, so nothing more is written. */
  #broken: StorageError | undefined;

  private constructor(file: string, fd: number, size: number) {
    this.#file = file;
    this.#fd = fd;
    this.#size = size;
  }

  /** Opens (or creates) the journal and hands each complete line's change to `apply`, in order. */
  static open(file: string, apply: (change: Change) => void): Journal {
    mkdirSync(dirname(file), { recursive: true });
    const fd = openSync(file, 'a');
    try {
      const bytes = readFileSync(file);
      // A crash in the middle of a write leaves an unterminated last line: that change never counted, so it goes.
      const complete = bytes.lastIndexOf(0x0a) + 1;
      bytes
        .subarray(0, complete)
        .toString('utf8')
        .split('\n')
        .slice(0, -1)
        .forEach((line, index) => {
          apply(parseLine(file, index + 1, line));
        });
      if (complete < bytes.length) {
        ftruncateSync(fd, complete);
        fdatasyncSync(fd);
      }
      return new Journal(file, fd, complete);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  write(change: Change): void {
    if (this.#broken) throw this.#broken;
    const json = JSON.stringify(change);
    const bytes = Buffer.from(`${sha256Hex(Buffer.from(json))} ${json}\n`);
    try {
      for (let written = 0; written < bytes.length; ) written += writeSync(this.#fd, bytes, written);
      fdatasyncSync(this.#fd);
      this.#size += bytes.length;
    } catch (cause) {
      // Cut off what part of the line reached the file, so the next change starts on a line of its own.
      try {
        ftruncateSync(this.#fd, this.#size);
      } catch {
        this.#broken = new StorageError(`json-lines store ${this.#file}: a write failed and could not be undone; reopen the store`, { cause, poisoned: true });
        throw this.#broken;
      }
      throw new StorageError(`json-lines store ${this.#file}: a write failed, nothing was stored`, { cause });
    }
  }

  close(): void {
    closeSync(this.#fd);
  }
}

function parseLine(file: string, line: number, text: string): Change {
  const space = text.indexOf(' ');
  const json = text.slice(space + 1);
  if (space !== 64 || text.slice(0, space) !== sha256Hex(Buffer.from(json))) throw new CorruptionError(file, line, 'checksum mismatch');
  try {
    return JSON.parse(json) as Change;
  } catch (cause) {
    throw new CorruptionError(file, line, 'not JSON', { cause });
  }
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

async function* copies(events: readonly RecordedEvent[]): AsyncIterable<RecordedEvent> {
  for (const event of events) yield { ...event, data: cloneJson(event.data) };
}
