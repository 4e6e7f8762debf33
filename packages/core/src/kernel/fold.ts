import { abortPoints } from './abort-points.js';
import { CorruptionError, InvalidInputError } from './errors.js';
import type { JsonValue } from './json.js';
import type { EventShape, EventStore, RecordedEvent, Snapshot, StreamId, StreamRead } from './port.js';
import { validateSignalOption } from './validate.js';
import { checkSnapshotVersion, prepareReducer, type EventUpcasters, type StateMigration } from './versioning.js';

/** Options of the long kernel operations (`foldStream`, `compactStream`, `compactStreamKeeping`, `copyStore`). */
export interface AbortOptions {
  /**
   * When it fires, the operation stops at its next event, batch, blob or stream and rejects with the signal's
   * reason, as `verify` does; what it had written stays whole (see each operation).
   */
  signal?: AbortSignal;
}

/**
 * A pure left fold over one stream's events, with the version of the state shape it produces. The fold helpers
 * (`foldStream`, `compactStream`, `prepareReducer`) bring what is stored to the current shapes first, so `apply`
 * and `fromSnapshot` only ever see the newest version of an event's data and of the state. `E` is the union of the
 * stream's events, so `apply` can switch on `event.type` exhaustively (default: any type, any JSON data).
 */
export interface StreamReducer<S, E extends EventShape = EventShape> {
  /**
   * Bumped whenever the snapshotted state's shape changes. An older snapshot is migrated by `migrations`; a
   * newer one is refused (`SchemaVersionTooNewError`), never reset.
   */
  readonly schemaVersion: number;
  /** Steps that bring snapshot states of older versions to `schemaVersion` (a chain: 1 → 2, 2 → 3). */
  readonly migrations?: readonly StateMigration[];
  /**
   * Steps that bring the data of older events to the newest version of their type, by type. A type without
   * upcasters has version 1 only; an event of a version newer than its type's newest is refused.
   */
  readonly upcasters?: EventUpcasters;
  initial(stream: StreamId): S;
  apply(state: S, event: RecordedEvent<E>): S;
  /** State → JSON for a snapshot, and back. */
  toSnapshot(state: S): JsonValue;
  fromSnapshot(state: JsonValue): S;
}

/** A folded stream: its state and the revision it reflects (0 = the stream does not exist). */
export interface FoldedStream<S> {
  state: S;
  revision: number;
  /** Whether the stream exists (revision ≥ 1). */
  exists: boolean;
}

/**
 * Checks a snapshot's identity before its state is used: `CorruptionError` when it names another stream,
 * `SchemaVersionTooNewError` when its state is newer than the reducer's, `MissingMigrationError` when it is older
 * and the reducer has no migration path from it (a bare version number has none).
 */
export function checkSnapshotIdentity(stream: StreamId, snapshot: Snapshot, reducer: StreamReducer<unknown> | number): void {
  if (typeof reducer === 'number') checkSnapshotVersion(stream, snapshot, reducer, NO_MIGRATIONS);
  else prepareReducer(reducer).check(stream, snapshot);
}

const NO_MIGRATIONS: ReadonlyMap<number, StateMigration> = new Map();

/** The reducer as the untyped fold helpers take it; the events it is handed are the stream's, taken to be `E`. */
const asUntyped = <S, E extends EventShape>(reducer: StreamReducer<S, E>): StreamReducer<S> => reducer as unknown as StreamReducer<S>;

/**
 * Folds a stream (snapshot, then the events after it) with `reducer`, streaming the events. An older snapshot is
 * migrated and older events upcast on the way (see `StreamReducer`); newer ones are refused. A fired `signal`
 * stops the fold between events (it rejects with the signal's reason); a fold only reads.
 * With `toRevision` it stops after that revision (a revision below the stream's snapshot is `InvalidInputError`).
 *
 * With an untyped store and a reducer typed by events `E`, the stream is taken to hold only events `E`.
 */
export async function foldStream<S, E extends EventShape = EventShape>(
  store: EventStore<E> | EventStore,
  stream: StreamId,
  reducer: StreamReducer<S, E>,
  options?: FoldOptions,
): Promise<FoldedStream<S>> {
  const signal = validateSignalOption(options);
  const until = validateToRevision(options);
  signal?.throwIfAborted();
  const read = await store.read(stream);
  if (read.snapshot !== undefined && read.snapshot.revision > until) {
    // Started and stopped, so a store can release what the read holds open.
    for await (const _ of read.events) break;
    throw new InvalidInputError(
      'toRevision',
      `revision ${until} of ${stream} was compacted: the oldest retained state is at revision ${read.snapshot.revision}`,
    );
  }
  const { state, revision } = await foldRead(stream, read, asUntyped(reducer), until, signal);
  return { state, revision, exists: revision > 0 };
}

/** Options of `foldStream`: stop early (`signal`) or fold only up to a revision (`toRevision`). */
export interface FoldOptions extends AbortOptions {
  /** Folds the events up to this revision (a positive integer) and leaves the later ones unread; default: all. */
  toRevision?: number;
}

function validateToRevision(options: FoldOptions | undefined): number {
  const toRevision = options?.toRevision;
  if (toRevision === undefined) return Number.POSITIVE_INFINITY;
  if (!Number.isSafeInteger(toRevision) || toRevision < 1) throw new InvalidInputError('toRevision', 'expected a positive integer');
  return toRevision;
}

/**
 * Folds what `read` returned, up to revision `until` (the events after it are left unread), in current shapes.
 * An abort leaves the loop by throwing, which ends the read as a `break` would.
 */
async function foldRead<S>(
  stream: StreamId,
  read: StreamRead,
  reducer: StreamReducer<S>,
  until: number,
  signal: AbortSignal | undefined,
): Promise<{ state: S; revision: number }> {
  const prepared = prepareReducer(reducer);
  let state: S;
  let revision = 0;
  if (read.snapshot) {
    state = prepared.restore(stream, read.snapshot);
    revision = read.snapshot.revision;
  } else {
    state = reducer.initial(stream);
  }
  const point = abortPoints(signal);
  for await (const event of read.events) {
    const turn = point();
    if (turn) await turn;
    if (event.revision > until) break;
    if (event.revision !== revision + 1) {
      throw new CorruptionError(`stream ${stream}`, undefined, `revision ${event.revision} follows revision ${revision}`);
    }
    state = prepared.apply(state, event);
    revision = event.revision;
  }
  return { state, revision };
}

/**
 * Folds a stream and compacts it to a snapshot of the result, in the reducer's current state version (so this
 * also re-snapshots a stream whose snapshot was migrated on read); returns the snapshot's revision (0: nothing to do).
 * A fired `signal` stops it during the fold or before the compaction is sent: the stream is then left as it was.
 */
export async function compactStream<S, E extends EventShape = EventShape>(
  store: EventStore<E> | EventStore,
  stream: StreamId,
  reducer: StreamReducer<S, E>,
  options?: AbortOptions,
): Promise<number> {
  const signal = validateSignalOption(options);
  const folded = await foldStream(store, stream, reducer, { ...(signal === undefined ? {} : { signal }) });
  if (!folded.exists) return 0;
  signal?.throwIfAborted();
  await store.compact(stream, {
    revision: folded.revision,
    state: reducer.toSnapshot(folded.state),
    identity: { stream, schemaVersion: reducer.schemaVersion },
  });
  return folded.revision;
}

/** What `compactStreamKeeping` did: the revision of the stream's snapshot afterwards (0: none) and the events it dropped. */
export interface CompactionReport {
  revision: number;
  droppedEvents: number;
}

/**
 * Compacts a stream but keeps its newest `keepEvents` events as events (with their ids, so recent idempotent
 * retries are still recognised): the snapshot is the fold up to the head's revision minus `keepEvents`. Does
 * nothing when the stored snapshot already covers that revision. A fired `signal` stops it as `compactStream`.
 */
export async function compactStreamKeeping<S, E extends EventShape = EventShape>(
  store: EventStore<E> | EventStore,
  stream: StreamId,
  reducer: StreamReducer<S, E>,
  keepEvents: number,
  options?: AbortOptions,
): Promise<CompactionReport> {
  const signal = validateSignalOption(options);
  signal?.throwIfAborted();
  const read = await store.read(stream);
  const stored = read.snapshot?.revision ?? 0;
  const target = read.revision - keepEvents;
  if (target < 1 || target <= stored) {
    // Started and stopped, so a store can release what the read holds open.
    for await (const _ of read.events) break;
    return { revision: stored, droppedEvents: 0 };
  }
  const folded = await foldRead(stream, read, asUntyped(reducer), target, signal);
  signal?.throwIfAborted();
  await store.compact(stream, {
    revision: folded.revision,
    state: reducer.toSnapshot(folded.state),
    identity: { stream, schemaVersion: reducer.schemaVersion },
  });
  return { revision: folded.revision, droppedEvents: folded.revision - stored };
}

/** What `copyStore` did. */
export interface CopyReport {
  streams: number;
  events: number;
  blobs: number;
  /** Streams already identical in the destination. */
  unchanged: number;
}

/** Options of `copyStore`. */
export interface CopyOptions extends AbortOptions {
  /** Events per append to the destination (default 500). */
  batchSize?: number;
  /** Called after each stream is copied, with the totals so far. */
  onProgress?: (report: CopyReport, stream: StreamId) => void;
}

/**
 * Copies every stream (snapshot, events with their ids and revisions, blobs) from one store to another.
 * Copying again only adds what is new; a destination stream that is ahead or has diverged is refused. A fired
 * `signal` stops the copy before its next append or blob (it rejects with the signal's reason): every append
 * made is whole, so the destination holds a prefix of each stream, and copying again continues from there.
 */
export async function copyStore(from: EventStore, to: EventStore, options: CopyOptions = {}): Promise<CopyReport> {
  const signal = validateSignalOption(options);
  const batchSize = options.batchSize ?? 500;
  const report: CopyReport = { streams: 0, events: 0, blobs: 0, unchanged: 0 };
  signal?.throwIfAborted();
  const point = abortPoints(signal);
  for await (const { stream } of from.streams()) {
    const turn = point();
    if (turn) await turn;
    const source = await from.read(stream);
    const target = (await to.read(stream)).revision;
    report.streams++;
    if (target > source.revision) {
      throw new InvalidInputError('to', `stream ${stream} is at revision ${target} in the destination, past the source's ${source.revision}`);
    }
    // What the destination holds at its head, to tell a stream copied before from one that diverged.
    const destinationHead = target === 0 ? undefined : await headAt(to, stream, target);
    const refuseIfDiverged = (sourceHead: string | undefined) => {
      if (destinationHead !== undefined && sourceHead !== undefined && sourceHead !== destinationHead) {
        throw new InvalidInputError('to', `stream ${stream} differs from the source at revision ${target} in the destination`);
      }
    };
    if (source.snapshot?.revision === target) refuseIfDiverged(fingerprint(source.snapshot));
    let revision = target;
    if (target === source.revision) report.unchanged++;
    else if (source.snapshot && source.snapshot.revision > target) {
      if (target !== 0) {
        throw new InvalidInputError('to', `stream ${stream} stops at revision ${target} in the destination, inside the source's snapshot`);
      }
      signal?.throwIfAborted();
      revision = (await to.restoreStream(stream, source.snapshot)).revision;
    }
    let batch: RecordedEvent[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      signal?.throwIfAborted();
      const events = batch.map((event) => ({
        type: event.type,
        data: event.data,
        schemaVersion: event.schemaVersion,
        ...(event.eventId === undefined ? {} : { eventId: event.eventId }),
      }));
      revision = (await to.append(stream, events, { expectedRevision: revision === 0 ? 'no_stream' : revision })).revision;
      report.events += batch.length;
      batch = [];
    };
    for await (const event of source.events) {
      const turn = point();
      if (turn) await turn;
      if (event.revision === target) refuseIfDiverged(fingerprint(event));
      if (event.revision <= revision) continue;
      batch.push(event);
      if (batch.length >= batchSize) await flush();
    }
    await flush();
    const copied = new Set<string>();
    for await (const sha of to.blobs(stream)) copied.add(sha);
    for await (const sha of from.blobs(stream)) {
      if (copied.has(sha)) continue;
      signal?.throwIfAborted();
      const bytes = await from.getBlob(sha);
      if (!bytes) throw new CorruptionError(`blob ${sha}`, undefined, `stream ${stream} owns it but the source store has no bytes for it`);
      await to.putBlob(stream, bytes);
      report.blobs++;
    }
    options.onProgress?.(report, stream);
  }
  return report;
}

/** A comparable digest of the event (or snapshot) at a stream's revision. */
function fingerprint(item: RecordedEvent | Snapshot): string {
  return 'type' in item ? JSON.stringify([item.type, item.eventId ?? null, item.schemaVersion, item.data]) : JSON.stringify(['$snapshot', item.state]);
}

/** The fingerprint of what `store` holds at exactly `revision` of `stream`, if it holds an event or snapshot there. */
async function headAt(store: EventStore, stream: StreamId, revision: number): Promise<string | undefined> {
  const read = await store.read(stream, { fromRevision: revision });
  if (read.snapshot) return read.snapshot.revision === revision ? fingerprint(read.snapshot) : undefined;
  for await (const event of read.events) return event.revision === revision ? fingerprint(event) : undefined;
  return undefined;
}
