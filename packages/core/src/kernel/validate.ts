import { validateCheckpointName } from './capabilities.js';
import { InvalidInputError, SessionfoldError } from './errors.js';
import { readJson } from './json.js';
import { jsonPathText } from './json-walk.js';
import type { ExpectedRevision, StreamId } from './port.js';

/** Stream ids are safe file names: a letter or digit, then up to 127 of letters, digits, `.`, `_`, `-`. */
export const STREAM_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Default largest serialized event (type + data), in bytes. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;
/**
 * Largest event schema version: what a 32-bit signed integer column holds, so every store (PostgreSQL's
 * `integer` included) keeps the same values.
 */
export const MAX_EVENT_SCHEMA_VERSION = 2 ** 31 - 1;
const SHA256_PATTERN = /^[0-9a-f]{64}$/;

/** An event as `validateAppend` read it: each field read once from the caller's object, the data as JSON text. */
export interface ValidatedEvent {
  readonly type: string;
  /** Undefined when the event carries no id. */
  readonly eventId: string | undefined;
  /** The event's data serialized: what a store keeps and what reads parse back. */
  readonly dataJson: string;
  /** The version of the data's shape, 1 when the caller gave none. */
  readonly schemaVersion: number;
}

/** An append as `validateAppend` read it: a store writes exactly this, never the caller's objects again. */
export interface ValidatedAppend {
  readonly expectedRevision: ExpectedRevision;
  /** At least one event; event ids unique within the batch. */
  readonly events: readonly ValidatedEvent[];
}

/** A snapshot as `validateSnapshot` read it, its state as JSON text; `identity.stream` is the stream it was handed for. */
export interface ValidatedSnapshot {
  readonly revision: number;
  readonly identity: { readonly stream: StreamId; readonly schemaVersion: number };
  readonly stateJson: string;
}

/** Throws `InvalidInputError` unless `stream` is a valid stream id. */
export function validateStreamId(stream: unknown, field = 'stream'): asserts stream is StreamId {
  if (typeof stream !== 'string' || !STREAM_ID_PATTERN.test(stream)) {
    throw new InvalidInputError(field, `${describeValue(stream)} is not a valid stream id (${STREAM_ID_PATTERN.source})`);
  }
}

/**
 * Names Windows reserves for devices (the part before the first `.`, any case) and names ending in `.`, which
 * Windows cannot keep as file names: valid stream ids and checkpoint names, but no new one may be one.
 */
const RESERVED_NAME_PATTERN = /^(?:(?:con|prn|aux|nul|com[1-9]|lpt[1-9])(?:\..*)?|.*\.)$/i;

/** True when `name` is one no store creates: a Windows device name (`CON`, `aux.jsonl`, `lpt1`, …) or one ending in `.`. */
export function isReservedName(name: string): boolean {
  return RESERVED_NAME_PATTERN.test(name);
}

/**
 * Throws `InvalidInputError` naming `field` unless `name` may be created: a valid stream id that is not a
 * reserved name. Reads, deletes and exports take any valid id, so a stream stored before stays reachable.
 */
export function validateNewStreamId(stream: unknown, field = 'stream'): asserts stream is StreamId {
  validateStreamId(stream, field);
  if (isReservedName(stream)) throw new InvalidInputError(field, `${describeValue(stream)} ${RESERVED_REASON}`);
}

/** Why a reserved name is refused, shared by streams and checkpoints. */
const RESERVED_REASON =
  'is reserved on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9 before the first ".", or a name ending in "."), so no stream or checkpoint is created under it';

/** Checks the name of a checkpoint about to be saved: a valid name that is not a reserved one (`isReservedName`). */
export function validateNewCheckpointName(name: unknown): asserts name is string {
  validateCheckpointName(name);
  if (isReservedName(name)) throw new InvalidInputError('name', `checkpoint name ${JSON.stringify(name)} ${RESERVED_REASON}`);
}

/** Throws `InvalidInputError` unless `expected` is a revision ≥ 0, `'no_stream'`, `'never_existed'` or `'any'`. */
export function validateExpectedRevision(expected: unknown): asserts expected is ExpectedRevision {
  if (expected === 'no_stream' || expected === 'never_existed' || expected === 'any') return;
  if (typeof expected === 'number' && Number.isSafeInteger(expected) && expected >= 0) return;
  throw new InvalidInputError('expectedRevision', `${describeValue(expected)} is not a revision, 'no_stream', 'never_existed' or 'any'`);
}

/**
 * Reads `expectedRevision` from the options of an append or delete, once, and returns it validated: what the
 * store must act on (a getter answering differently later changes nothing).
 */
export function validateWriteOptions(options: unknown): ExpectedRevision {
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('options', 'expected { expectedRevision }');
  const expected = readMember(options, 'expectedRevision', 'expectedRevision');
  validateExpectedRevision(expected);
  return expected;
}

/** Reads `read`'s options once; undefined and null mean none. Returns `fromRevision` (default 1). */
export function validateReadOptions(options: unknown): number {
  return readFrom(options, 'fromRevision');
}

/** Reads `readAll`'s options once; undefined and null mean none. Returns `fromPosition` (default 1). */
export function validateReadAllOptions(options: unknown): number {
  return readFrom(options, 'fromPosition');
}

/** Reads `streams`'s options once; undefined and null mean none. Returns `prefix` (default `''`). */
export function validateStreamsOptions(options: unknown): string {
  if (options === undefined || options === null) return '';
  if (typeof options !== 'object') throw new InvalidInputError('options', `expected { prefix } or nothing, got ${describeValue(options)}`);
  const prefix = readMember(options, 'prefix', 'prefix');
  if (prefix === undefined) return '';
  if (typeof prefix !== 'string') throw new InvalidInputError('prefix', `expected a string, got ${describeValue(prefix)}`);
  validateText(prefix, 'prefix');
  return prefix;
}

function readFrom(options: unknown, key: 'fromRevision' | 'fromPosition'): number {
  if (options === undefined || options === null) return 1;
  if (typeof options !== 'object') throw new InvalidInputError('options', `expected { ${key} } or nothing, got ${describeValue(options)}`);
  const from = readMember(options, key, key);
  validateFrom(key, from);
  return from ?? 1;
}

/** True when a stream at `actual` (0 = missing), deleted at some time before when `wasDeleted`, satisfies `expected`. */
export function revisionMatches(expected: ExpectedRevision, actual: number, wasDeleted = false): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === 0;
  if (expected === 'never_existed') return actual === 0 && !wasDeleted;
  return expected === actual;
}

/**
 * Checks an append's arguments before anything is touched, reading each field of the caller's objects once,
 * and returns what was read: the store writes that batch and nothing else. Types and event ids are
 * well-formed Unicode without U+0000 (every store keeps them identically); data is plain JSON nested at most
 * `MAX_JSON_DEPTH` levels, serialized here. Throws `InvalidInputError` naming the first bad field, also when
 * reading the caller's objects throws.
 */
export function validateAppend(stream: unknown, events: unknown, options: unknown, maxEventBytes = DEFAULT_MAX_EVENT_BYTES): ValidatedAppend {
  // An append may create the stream, so a reserved name is refused here (appends to one stored before included).
  validateNewStreamId(stream);
  const expectedRevision = validateWriteOptions(options);
  let index = -1;
  try {
    if (!Array.isArray(events)) throw new InvalidInputError('events', 'expected a non-empty array of events');
    const count = events.length;
    if (count === 0) throw new InvalidInputError('events', 'expected a non-empty array of events');
    const validated = new Array<ValidatedEvent>(count);
    let ids: Set<string> | undefined;
    for (index = 0; index < count; index++) {
      const event: unknown = events[index];
      if (typeof event !== 'object' || event === null) throw new InvalidInputError(`events[${index}]`, 'expected an object');
      const { type, data, eventId, schemaVersion } = event as { type?: unknown; data?: unknown; eventId?: unknown; schemaVersion?: unknown };
      if (typeof type !== 'string' || type.length === 0 || type.length > 256 || type.startsWith('$')) {
        throw new InvalidInputError(`events[${index}].type`, 'expected a string of 1..256 characters not starting with "$"');
      }
      if (!isStorableText(type)) validateText(type, `events[${index}].type`);
      if (eventId !== undefined) {
        if (typeof eventId !== 'string' || eventId.length === 0 || eventId.length > 255) {
          throw new InvalidInputError(`events[${index}].eventId`, 'expected a string of 1..255 characters');
        }
        if (!isStorableText(eventId)) validateText(eventId, `events[${index}].eventId`);
        ids ??= new Set<string>();
        if (ids.has(eventId)) throw new InvalidInputError(`events[${index}].eventId`, `${JSON.stringify(eventId)} appears twice in the batch`);
        ids.add(eventId);
      }
      // Nearly every event leaves the version out: only a given one pays for the check.
      if (schemaVersion !== undefined && !isEventSchemaVersion(schemaVersion)) {
        throw new InvalidInputError(
          `events[${index}].schemaVersion`,
          `expected an integer from 1 to ${MAX_EVENT_SCHEMA_VERSION}, got ${describeValue(schemaVersion)}`,
        );
      }
      validated[index] = { type, eventId, dataJson: serializeData(data, type, index, maxEventBytes), schemaVersion: schemaVersion ?? 1 };
    }
    return { expectedRevision, events: validated };
  } catch (error) {
    if (error instanceof SessionfoldError) throw error;
    throw unreadable(index < 0 ? 'events' : `events[${index}]`, error);
  }
}

/** True when `value` is a valid event schema version: an integer from 1 to `MAX_EVENT_SCHEMA_VERSION`. */
export function isEventSchemaVersion(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_EVENT_SCHEMA_VERSION;
}

/**
 * Throws `InvalidInputError` unless `text` can be stored identically by every store: well-formed UTF-16 (no lone
 * surrogate, which SQLite would replace) without U+0000 (which PostgreSQL's text refuses).
 */
export function validateText(text: string, field: string): void {
  if (isStorableText(text)) return;
  if (!text.isWellFormed()) throw new InvalidInputError(field, `${describeValue(text)} is not well-formed Unicode (it has a lone surrogate)`);
  throw new InvalidInputError(field, `${describeValue(text)} contains U+0000`);
}

/** `validateText` without building a message: the per-event check of the append path. */
function isStorableText(text: string): boolean {
  return text.isWellFormed() && !text.includes('\u0000');
}

/** Checks that an event's data is plain JSON (`readJson`) within the size limit, and returns it serialized. */
function serializeData(data: unknown, type: string, index: number, maxEventBytes: number): string {
  const field = `events[${index}].data`;
  const json = serializeJson(data, field, 'data');
  // A UTF-16 code unit never takes more than 3 UTF-8 bytes: counting the bytes exactly is needed only near the limit.
  if ((json.length + type.length) * 3 <= maxEventBytes) return json;
  const size = Buffer.byteLength(json) + Buffer.byteLength(type);
  if (size > maxEventBytes) throw new InvalidInputError(field, `event is ${size} bytes, over the limit of ${maxEventBytes}`);
  return json;
}

/** `value` as JSON text once `readJson` found it plain JSON; otherwise `InvalidInputError` naming `field` and the bad part of `name`. */
function serializeJson(value: unknown, field: string, name: string): string {
  const { problem } = readJson(value);
  if (problem?.cause !== undefined) throw unreadable(field, problem.cause);
  if (problem !== undefined) throw new InvalidInputError(field, `${jsonPathText(name, problem.path)} is not JSON (${problem.message})`);
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw unreadable(field, error);
  }
  // Only a value that changed after the check (a getter, a Proxy answering differently) gets here without JSON.
  if (typeof json !== 'string') throw new InvalidInputError(field, `${name} is not JSON (it serialized to nothing)`);
  return json;
}

/**
 * Checks a snapshot handed to `compact` or `restoreStream` for `stream`, reading each member once, and returns
 * what was read, the state serialized. A snapshot has exactly `revision`, `state` and `identity` (`stream`,
 * `schemaVersion`); any other member is refused, so every store keeps the same thing.
 */
export function validateSnapshot(stream: unknown, snapshot: unknown): ValidatedSnapshot {
  validateStreamId(stream);
  if (typeof snapshot !== 'object' || snapshot === null) throw new InvalidInputError('snapshot', 'expected an object');
  let field = 'snapshot';
  try {
    refuseUnknownMembers(snapshot, SNAPSHOT_MEMBERS, field);
    const { revision, state, identity } = snapshot as { revision?: unknown; state?: unknown; identity?: unknown };
    field = 'snapshot.revision';
    if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 1) {
      throw new InvalidInputError(field, `expected an integer ≥ 1, got ${describeValue(revision)}`);
    }
    field = 'snapshot.state';
    const stateJson = serializeJson(state, field, 'state');
    field = 'snapshot.identity';
    if (typeof identity !== 'object' || identity === null) throw new InvalidInputError(field, 'expected { stream, schemaVersion }');
    refuseUnknownMembers(identity, IDENTITY_MEMBERS, field);
    const { stream: owner, schemaVersion } = identity as { stream?: unknown; schemaVersion?: unknown };
    if (owner !== stream) {
      throw new InvalidInputError('snapshot.identity.stream', `snapshot is for ${describeValue(owner)}, not ${JSON.stringify(stream)}`);
    }
    if (typeof schemaVersion !== 'number' || !Number.isSafeInteger(schemaVersion) || schemaVersion < 0) {
      throw new InvalidInputError('snapshot.identity.schemaVersion', `expected an integer ≥ 0, got ${describeValue(schemaVersion)}`);
    }
    return { revision, identity: { stream, schemaVersion }, stateJson };
  } catch (error) {
    if (error instanceof SessionfoldError) throw error;
    throw unreadable(field, error);
  }
}

/** A validated snapshot as JSON text, in the port's `Snapshot` shape (what `read` and `$snapshot` records give back). */
export function snapshotJson(snapshot: ValidatedSnapshot): string {
  const { revision, identity, stateJson } = snapshot;
  return `{"revision":${revision},"state":${stateJson},"identity":{"stream":${JSON.stringify(identity.stream)},"schemaVersion":${identity.schemaVersion}}}`;
}

const SNAPSHOT_MEMBERS: ReadonlySet<string> = new Set(['revision', 'state', 'identity']);
const IDENTITY_MEMBERS: ReadonlySet<string> = new Set(['stream', 'schemaVersion']);

function refuseUnknownMembers(object: object, known: ReadonlySet<string>, field: string): void {
  for (const key of Object.keys(object)) {
    if (!known.has(key)) throw new InvalidInputError(`${field}.${key}`, `unknown member (a snapshot has only ${[...known].join(', ')})`);
  }
}

/**
 * Calls a store's clock and returns the time as ISO 8601 UTC. A clock that throws or returns anything but a valid
 * `Date` is `InvalidInputError` (field `clock`): call this before writing anything, so nothing is half-written.
 */
export function readClock(clock: () => Date): string {
  let now: unknown;
  try {
    now = clock();
  } catch (error) {
    throw new InvalidInputError('clock', `the clock threw: ${messageOf(error)}`, { cause: error });
  }
  if (!(now instanceof Date) || Number.isNaN(now.getTime()))
    throw new InvalidInputError('clock', `expected a valid Date from the clock, got ${describeValue(now)}`);
  return now.toISOString();
}

/** Throws `InvalidInputError` unless `sha256` is 64 lowercase hex digits. */
export function validateSha256(sha256: unknown): asserts sha256 is string {
  if (typeof sha256 !== 'string' || !SHA256_PATTERN.test(sha256)) {
    throw new InvalidInputError('sha256', `${describeValue(sha256)} is not a lowercase hex sha256`);
  }
}

/** Throws `InvalidInputError` unless `value` is undefined or an integer ≥ 1. */
export function validateFrom(field: string, value: unknown): asserts value is number | undefined {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidInputError(field, `expected an integer ≥ 1, got ${describeValue(value)}`);
  }
}

/** Reads `object[key]` once; a getter or Proxy trap that throws is the caller's input, so `InvalidInputError`. */
function readMember(object: object, key: string, field: string): unknown {
  try {
    return (object as Record<string, unknown>)[key];
  } catch (error) {
    throw unreadable(field, error);
  }
}

function unreadable(field: string, error: unknown): InvalidInputError {
  return new InvalidInputError(field, `could not be read or serialized: ${messageOf(error)}`, { cause: error });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : describeValue(error);
}

/**
 * A short description of any value for an error message. Never throws (unlike `JSON.stringify`, which also
 * shows NaN as null): numbers as written, strings quoted and cut at 80 characters, other things by kind.
 */
function describeValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value);
    case 'bigint':
      return `${value}n`;
    case 'undefined':
    case 'boolean':
    case 'symbol':
      return String(value);
    case 'function':
      return 'a function';
    default:
      if (value === null) return 'null';
      try {
        return Array.isArray(value) ? 'an array' : value instanceof Date ? `a Date (${String(value)})` : 'an object';
      } catch {
        return 'an object';
      }
  }
}

/**
 * Reads the `signal` member of an options object (absent options and an absent member are undefined); throws
 * `InvalidInputError` for anything but an `AbortSignal`.
 */
export function validateSignalOption(options: unknown): AbortSignal | undefined {
  if (options === undefined || options === null) return undefined;
  const signal = (options as { signal?: unknown }).signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new InvalidInputError('signal', 'expected an AbortSignal');
  return signal;
}
