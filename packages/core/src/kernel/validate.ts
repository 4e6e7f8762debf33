import { InvalidInputError } from './errors.js';
import { findNonJson } from './json.js';
import type { ExpectedRevision, NewEvent, Snapshot, StreamId } from './port.js';

/** Stream ids are safe file names: a letter or digit, then up to 127 of letters, digits, `.`, `_`, `-`. */
export const STREAM_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Default largest serialized event (type + data), in bytes. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;
const SHA256_PATTERN = /^[0-9a-f]{64}$/;
/** Nesting the quick JSON check follows before it leaves the value (possibly cyclic) to `findNonJson`. */
const QUICK_JSON_DEPTH = 64;

/** Throws `InvalidInputError` unless `stream` is a valid stream id. */
export function validateStreamId(stream: unknown, field = 'stream'): asserts stream is StreamId {
  if (typeof stream !== 'string' || !STREAM_ID_PATTERN.test(stream)) {
    throw new InvalidInputError(field, `${JSON.stringify(stream)} is not a valid stream id (${STREAM_ID_PATTERN.source})`);
  }
}

/** Throws `InvalidInputError` unless `expected` is a revision ≥ 0, `'no_stream'` or `'any'`. */
export function validateExpectedRevision(expected: unknown): asserts expected is ExpectedRevision {
  if (expected === 'no_stream' || expected === 'any') return;
  if (typeof expected === 'number' && Number.isSafeInteger(expected) && expected >= 0) return;
  throw new InvalidInputError('expectedRevision', `${JSON.stringify(expected)} is not a revision, 'no_stream' or 'any'`);
}

/** True when a stream at `actual` (0 = missing) satisfies `expected`. */
export function revisionMatches(expected: ExpectedRevision, actual: number): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return actual === 0;
  return expected === actual;
}

/**
 * Checks an append's arguments before anything is touched and returns the serialized data of each event
 * (stores that write JSON reuse it). Throws `InvalidInputError` naming the first bad field.
 */
export function validateAppend(
  stream: unknown,
  events: unknown,
  options: unknown,
  maxEventBytes = DEFAULT_MAX_EVENT_BYTES,
): string[] {
  validateStreamId(stream);
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('options', 'expected { expectedRevision }');
  validateExpectedRevision((options as { expectedRevision?: unknown }).expectedRevision);
  if (!Array.isArray(events) || events.length === 0) throw new InvalidInputError('events', 'expected a non-empty array of events');
  const dataJson = new Array<string>(events.length);
  let ids: Set<string> | undefined;
  for (let index = 0; index < events.length; index++) {
    const event: unknown = events[index];
    if (typeof event !== 'object' || event === null) throw new InvalidInputError(`events[${index}]`, 'expected an object');
    const { type, data, eventId } = event as Partial<NewEvent>;
    if (typeof type !== 'string' || type.length === 0 || type.length > 256 || type.startsWith('$')) {
      throw new InvalidInputError(`events[${index}].type`, 'expected a string of 1..256 characters not starting with "$"');
    }
    if (eventId !== undefined) {
      if (typeof eventId !== 'string' || eventId.length === 0 || eventId.length > 255) {
        throw new InvalidInputError(`events[${index}].eventId`, 'expected a string of 1..255 characters');
      }
      ids ??= new Set<string>();
      if (ids.has(eventId)) throw new InvalidInputError(`events[${index}].eventId`, `${JSON.stringify(eventId)} appears twice in the batch`);
      ids.add(eventId);
    }
    dataJson[index] = serializeData(data, type, index, maxEventBytes);
  }
  return dataJson;
}

/** Checks that an event's data is plain JSON within the size limit, and returns it serialized. */
function serializeData(data: unknown, type: string, index: number, maxEventBytes: number): string {
  // The quick check answers for nearly every event; only a doubtful one pays for the walk that names the bad path.
  const bad = isQuicklyJson(data, 0) ? undefined : findNonJson(data);
  if (bad !== undefined) throw new InvalidInputError(`events[${index}].data`, `${bad.replace(/^\$/, 'data')} is not JSON`);
  const json = JSON.stringify(data);
  // A UTF-16 code unit never takes more than 3 UTF-8 bytes: counting the bytes exactly is needed only near the limit.
  if ((json.length + type.length) * 3 <= maxEventBytes) return json;
  const size = Buffer.byteLength(json) + Buffer.byteLength(type);
  if (size > maxEventBytes) throw new InvalidInputError(`events[${index}].data`, `event is ${size} bytes, over the limit of ${maxEventBytes}`);
  return json;
}

/**
 * True when `value` is plain JSON by the rules of `findNonJson`, without building the paths it reports. False
 * means "not sure": past `QUICK_JSON_DEPTH` levels (where a cycle may be) or on anything that is not JSON.
 */
function isQuicklyJson(value: unknown, depth: number): boolean {
  if (typeof value !== 'object') return isQuicklyJsonMember(value, depth);
  if (value === null) return true;
  if (depth >= QUICK_JSON_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isQuicklyJsonMember(value[i], depth + 1)) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  // An indexed loop: until this is optimized, an array iterator would cost per key.
  const keys = Object.keys(value);
  for (let i = 0; i < keys.length; i++) if (!isQuicklyJsonMember((value as Record<string, unknown>)[keys[i] as string], depth + 1)) return false;
  return true;
}

/** `isQuicklyJson` deciding scalars in place: most members are one, and a call per member is what costs. */
function isQuicklyJsonMember(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object':
      return isQuicklyJson(value, depth);
    default:
      return false;
  }
}

/** Checks a snapshot handed to `compact` or `restoreStream` for `stream`. */
export function validateSnapshot(stream: unknown, snapshot: unknown): asserts snapshot is Snapshot {
  validateStreamId(stream);
  if (typeof snapshot !== 'object' || snapshot === null) throw new InvalidInputError('snapshot', 'expected an object');
  const { revision, state, identity } = snapshot as Partial<Snapshot>;
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 1) {
    throw new InvalidInputError('snapshot.revision', 'expected an integer ≥ 1');
  }
  const bad = findNonJson(state);
  if (bad !== undefined) throw new InvalidInputError('snapshot.state', `${bad.replace(/^\$/, 'state')} is not JSON`);
  if (typeof identity !== 'object' || identity === null) throw new InvalidInputError('snapshot.identity', 'expected { stream, schemaVersion }');
  if (identity.stream !== stream) {
    throw new InvalidInputError('snapshot.identity.stream', `snapshot is for ${JSON.stringify(identity.stream)}, not ${JSON.stringify(stream)}`);
  }
  if (typeof identity.schemaVersion !== 'number' || !Number.isSafeInteger(identity.schemaVersion) || identity.schemaVersion < 0) {
    throw new InvalidInputError('snapshot.identity.schemaVersion', 'expected an integer ≥ 0');
  }
}

/** Throws `InvalidInputError` unless `sha256` is 64 lowercase hex digits. */
export function validateSha256(sha256: unknown): asserts sha256 is string {
  if (typeof sha256 !== 'string' || !SHA256_PATTERN.test(sha256)) {
    throw new InvalidInputError('sha256', `${JSON.stringify(sha256)} is not a lowercase hex sha256`);
  }
}

/** Throws `InvalidInputError` unless `value` is undefined or an integer ≥ 1. */
export function validateFrom(field: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new InvalidInputError(field, 'expected an integer ≥ 1');
  }
}
