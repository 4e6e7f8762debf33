import { CorruptionError, InvalidInputError } from './errors.js';
import type { JsonValue } from './json.js';
import type { EventStore, RecordedEvent, Snapshot, StreamId } from './port.js';

/** A pure left fold over one stream's events, with the version of the state shape it produces. */
export interface StreamReducer<S> {
  /** Bumped whenever the state's shape changes; snapshots of another version are refused. */
  readonly schemaVersion: number;
  initial(stream: StreamId): S;
  apply(state: S, event: RecordedEvent): S;
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

/** Checks a snapshot's identity against the stream and reducer before its state is used. */
export function checkSnapshotIdentity(stream: StreamId, snapshot: Snapshot, schemaVersion: number): void {
  if (snapshot.identity.stream !== stream) {
    throw new CorruptionError(`snapshot of ${stream}`, undefined, `identity names stream ${JSON.stringify(snapshot.identity.stream)}`);
  }
  if (snapshot.identity.schemaVersion !== schemaVersion) {
    throw new CorruptionError(
      `snapshot of ${stream}`,
      undefined,
      `state schema version ${snapshot.identity.schemaVersion} is not the reducer's ${schemaVersion}; ` +
        'fold with the matching reducer, or rebuild the snapshot from a copy of the events',
    );
  }
}

/** Folds a stream (snapshot, then the events after it) with `reducer`, streaming the events. */
export async function foldStream<S>(store: EventStore, stream: StreamId, reducer: StreamReducer<S>): Promise<FoldedStream<S>> {
  const read = await store.read(stream);
  let state: S;
  let revision = 0;
  if (read.snapshot) {
    checkSnapshotIdentity(stream, read.snapshot, reducer.schemaVersion);
    state = reducer.fromSnapshot(read.snapshot.state);
    revision = read.snapshot.revision;
  } else {
    state = reducer.initial(stream);
  }
  for await (const event of read.events) {
    if (event.revision !== revision + 1) {
      throw new CorruptionError(`stream ${stream}`, undefined, `revision ${event.revision} follows revision ${revision}`);
    }
    state = reducer.apply(state, event);
    revision = event.revision;
  }
  return { state, revision, exists: revision > 0 };
}

/** Folds a stream and compacts it to a snapshot of the result; returns the snapshot's revision (0: nothing to do). */
export async function compactStream<S>(store: EventStore, stream: StreamId, reducer: StreamReducer<S>): Promise<number> {
  const folded = await foldStream(store, stream, reducer);
  if (!folded.exists) return 0;
  await store.compact(stream, {
    revision: folded.revision,
    state: reducer.toSnapshot(folded.state),
    identity: { stream, schemaVersion: reducer.schemaVersion },
  });
  return folded.revision;
}

/** What `copyStore` did. */
export interface CopyReport {
  streams: number;
  events: number;
  blobs: number;
  /** Streams already identical in the destination. */
  unchanged: number;
}

/**
 * Copies every stream (snapshot, events with their ids and revisions, blobs) from one store to another.
 * Copying again only adds what is new; a destination stream that is ahead or has diverged is refused.
 */
export async function copyStore(
  from: EventStore,
  to: EventStore,
  options: { batchSize?: number; onProgress?: (report: CopyReport, stream: StreamId) => void } = {},
): Promise<CopyReport> {
  const batchSize = options.batchSize ?? 500;
  const report: CopyReport = { streams: 0, events: 0, blobs: 0, unchanged: 0 };
  for await (const { stream } of from.streams()) {
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
      revision = (await to.restoreStream(stream, source.snapshot)).revision;
    }
    let batch: RecordedEvent[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const events = batch.map((event) => ({ type: event.type, data: event.data, ...(event.eventId === undefined ? {} : { eventId: event.eventId }) }));
      revision = (await to.append(stream, events, { expectedRevision: revision === 0 ? 'no_stream' : revision })).revision;
      report.events += batch.length;
      batch = [];
    };
    for await (const event of source.events) {
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
  return 'type' in item ? JSON.stringify([item.type, item.eventId ?? null, item.data]) : JSON.stringify(['$snapshot', item.state]);
}

/** The fingerprint of what `store` holds at exactly `revision` of `stream`, if it holds an event or snapshot there. */
async function headAt(store: EventStore, stream: StreamId, revision: number): Promise<string | undefined> {
  const read = await store.read(stream, { fromRevision: revision });
  if (read.snapshot) return read.snapshot.revision === revision ? fingerprint(read.snapshot) : undefined;
  for await (const event of read.events) return event.revision === revision ? fingerprint(event) : undefined;
  return undefined;
}
