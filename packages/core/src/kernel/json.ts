import { InvalidInputError } from './errors.js';
import { jsonPathText, walkJson } from './json-walk.js';

export { MAX_JSON_DEPTH } from './json-walk.js';

/** Any value that survives `JSON.stringify` → `JSON.parse` unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object (the shape of most event data and states). */
export type JsonObject = { [key: string]: JsonValue };

/**
 * Reads `value` as plain JSON in one walk: null, booleans, finite numbers, strings, arrays without holes, and objects
 * whose prototype is `Object.prototype` or null; no `toJSON` method (`JSON.stringify` would store what it returns,
 * not what was checked), no cycle, at most `MAX_JSON_DEPTH` levels of arrays and objects. Members are what
 * `JSON.stringify` reads (own enumerable string keys), each read once. Returns the value itself, or with `copy` a
 * deep copy as JSON text gives it back (`-0` as `0`, every object plain, an own `__proto__` key kept a key); or the
 * first problem: its `path` (keys and indexes from the value's root; none when the whole value is at fault, as when
 * it nests too deep or reading it throws), a `message`, and what the caller's code threw as `cause`.
 * `refuseProtoKeys` also refuses a `__proto__` key, for values whose keys are later assigned.
 */
export function readJson(
  value: unknown,
  options: { readonly copy?: boolean; readonly refuseProtoKeys?: boolean } = {},
):
  | { readonly value: JsonValue; readonly problem?: undefined }
  | { readonly value?: undefined; readonly problem: { readonly path: readonly (string | number)[]; readonly message: string; readonly cause?: unknown } } {
  return walkJson(value, options.copy === true, options.refuseProtoKeys === true, false);
}

/**
 * `readJson`'s copy of a JSON value, so a store (or a service) never shares objects with its callers. It may nest
 * deeper than `MAX_JSON_DEPTH` (a snapshot around a state at the limit). Throws `InvalidInputError` (field `value`)
 * for anything else `readJson` refuses.
 */
export function cloneJson<T>(value: T): T {
  const read = walkJson(value, true, false, true);
  if (read.problem === undefined) return read.value as T;
  const { path, message, cause } = read.problem;
  throw new InvalidInputError('value', `${jsonPathText('value', path)}: ${message}`, cause === undefined ? undefined : { cause });
}
