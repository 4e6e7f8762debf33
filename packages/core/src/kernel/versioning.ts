import { CorruptionError, InvalidInputError, MissingMigrationError, SchemaVersionTooNewError } from './errors.js';
import type { StreamReducer } from './fold.js';
import type { JsonValue } from './json.js';
import type { RecordedEvent, Snapshot, StreamId } from './port.js';
import { MAX_EVENT_SCHEMA_VERSION } from './validate.js';

/**
 * One step of a reducer's state schema: brings a snapshot's state from version `from` to version `to`. Steps
 * chain (1 → 2 → 3); a step may skip versions (`from: 1, to: 3`) when that is simpler than two.
 */
export interface StateMigration {
  readonly from: number;
  readonly to: number;
  /** Pure: the state as snapshotted (JSON) in version `from`'s shape → the state in version `to`'s shape. */
  migrate(state: JsonValue): JsonValue;
}

/** One step of an event type's data schema: brings the data of an event stored with version `from` to `to`. */
export interface EventUpcaster {
  readonly from: number;
  readonly to: number;
  /** Pure: `data` in version `from`'s shape → version `to`'s; `event` is the event as stored, for context. */
  upcast(data: JsonValue, event: RecordedEvent): JsonValue;
}

/** A reducer's upcasters by event type; a type without any has only version 1. */
export type EventUpcasters = { readonly [eventType: string]: readonly EventUpcaster[] };

/**
 * A reducer made ready to fold what a store holds, whatever version of it: snapshots are migrated to the
 * reducer's state version and events upcast to the newest version of their type before the reducer sees them,
 * and anything newer than the reducer knows is refused. `prepareReducer` builds it once per reducer.
 */
export interface PreparedReducer<S> {
  readonly reducer: StreamReducer<S>;
  /**
   * The state in `snapshot`, migrated to the reducer's version. Throws `CorruptionError` when the snapshot names
   * another stream, `SchemaVersionTooNewError` when it is newer, `MissingMigrationError` when a step is missing.
   */
  restore(stream: StreamId, snapshot: Snapshot): S;
  /** Throws what `restore` would, without restoring: the snapshot can be brought to the reducer's version. */
  check(stream: StreamId, snapshot: Snapshot): void;
  /** Folds one event into `state`, upcast first when it is older than the newest version of its type. */
  apply(state: S, event: RecordedEvent): S;
  /**
   * The event as the reducer sees it: the same object when it already is of its type's newest version, else a
   * copy with the data upcast and `schemaVersion` the newest. Throws like `restore` (for events).
   */
  upcast(event: RecordedEvent): RecordedEvent;
  /** The newest data version of `type` — what an append of that type should name as `schemaVersion`. */
  eventVersion(type: string): number;
}

/** An event type's upcasters, indexed: steps by the version they start from, and the newest version. */
interface UpcastChain {
  readonly newest: number;
  readonly steps: ReadonlyMap<number, EventUpcaster>;
}

const prepared = new WeakMap<StreamReducer<unknown>, PreparedReducer<unknown>>();

/**
 * The reducer prepared for folding stored data (see `PreparedReducer`). Its migrations and upcasters are checked
 * and indexed on the first call and remembered, so calling this per read costs one lookup (a reducer is taken to
 * be immutable: steps added to it later are not seen). A declaration that
 * cannot work (a step that does not go forward, two steps from one version, a migration past the reducer's
 * version) is `InvalidInputError` naming it.
 */
export function prepareReducer<S>(reducer: StreamReducer<S>): PreparedReducer<S> {
  const known = prepared.get(reducer as StreamReducer<unknown>);
  if (known) return known as PreparedReducer<S>;
  const made = build(reducer);
  prepared.set(reducer as StreamReducer<unknown>, made as PreparedReducer<unknown>);
  return made;
}

function build<S>(reducer: StreamReducer<S>): PreparedReducer<S> {
  const version = reducer.schemaVersion;
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new InvalidInputError('reducer.schemaVersion', `expected an integer ≥ 0, got ${String(version)}`);
  }
  const migrations = indexSteps(reducer.migrations ?? [], 'reducer.migrations', 0, version);
  const chains = new Map<string, UpcastChain>();
  for (const [type, steps] of Object.entries(reducer.upcasters ?? {})) {
    const field = `reducer.upcasters[${JSON.stringify(type)}]`;
    const indexed = indexSteps(steps, field, 1, MAX_EVENT_SCHEMA_VERSION);
    if (indexed.size === 0) continue;
    chains.set(type, { newest: Math.max(...[...indexed.values()].map((step) => step.to)), steps: indexed });
  }
  // The common case, a reducer without upcasters, decides each event with one comparison.
  const noUpcasters = chains.size === 0;

  const check = (stream: StreamId, snapshot: Snapshot): void => checkSnapshotVersion(stream, snapshot, version, migrations);

  const upcast = (event: RecordedEvent): RecordedEvent => {
    // A store that predates event versions may leave the field out: that is version 1.
    const found = event.schemaVersion ?? 1;
    const chain = noUpcasters ? undefined : chains.get(event.type);
    const newest = chain?.newest ?? 1;
    if (found === newest) return event;
    const at = { stream: event.streamId, subject: 'event' as const, eventType: event.type, revision: event.revision };
    if (found > newest) throw new SchemaVersionTooNewError(at, found, newest);
    let data = event.data;
    for (let from = found; from < newest; ) {
      const step = chain?.steps.get(from);
      if (!step) throw new MissingMigrationError(at, from, newest);
      data = step.upcast(data, event);
      from = step.to;
    }
    return { ...event, data, schemaVersion: newest };
  };

  return {
    reducer,
    check,
    restore(stream, snapshot) {
      check(stream, snapshot);
      let state = snapshot.state;
      for (let from = snapshot.identity.schemaVersion; from < version; ) {
        const step = migrations.get(from) as StateMigration;
        state = step.migrate(state);
        from = step.to;
      }
      return reducer.fromSnapshot(state);
    },
    apply(state, event) {
      return reducer.apply(state, noUpcasters && event.schemaVersion === 1 ? event : upcast(event));
    },
    upcast,
    eventVersion: (type) => chains.get(type)?.newest ?? 1,
  };
}

/**
 * Throws unless `snapshot` belongs to `stream` and its state can be brought to `version` by `migrations` (indexed
 * by the version they start from): `CorruptionError`, `SchemaVersionTooNewError` or `MissingMigrationError`.
 */
export function checkSnapshotVersion(stream: StreamId, snapshot: Snapshot, version: number, migrations: ReadonlyMap<number, StateMigration>): void {
  if (snapshot.identity.stream !== stream) {
    throw new CorruptionError(`snapshot of ${stream}`, undefined, `identity names stream ${JSON.stringify(snapshot.identity.stream)}`);
  }
  const found = snapshot.identity.schemaVersion;
  if (found === version) return;
  const at = { stream, subject: 'snapshot' as const, revision: snapshot.revision };
  if (found > version) throw new SchemaVersionTooNewError(at, found, version);
  for (let from = found; from < version; ) {
    const step = migrations.get(from);
    if (!step) throw new MissingMigrationError(at, from, version);
    from = step.to;
  }
}

/** Indexes steps by `from`, refusing steps that do not go forward, start below `min`, twice from one version, or end past `limit`. */
function indexSteps<T extends { readonly from: number; readonly to: number }>(steps: readonly T[], field: string, min: number, limit: number): Map<number, T> {
  const indexed = new Map<number, T>();
  steps.forEach((step, index) => {
    const where = `${field}[${index}]`;
    const { from, to } = step;
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < min || to <= from) {
      throw new InvalidInputError(where, `expected integers with ${min} ≤ from < to, got from ${String(from)} to ${String(to)}`);
    }
    if (to > limit) throw new InvalidInputError(where, `goes to version ${to}, past the newest version ${limit}`);
    if (indexed.has(from)) throw new InvalidInputError(where, `a second step from version ${from}`);
    indexed.set(from, step);
  });
  return indexed;
}
