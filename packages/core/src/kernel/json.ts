import { locateNonJson } from './json-walk.js';

export { MAX_JSON_DEPTH } from './json-walk.js';

/** Any value that survives `JSON.stringify` → `JSON.parse` unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object (the shape of most event data and states). */
export type JsonObject = { [key: string]: JsonValue };

/**
 * Returns the path of the first part of `value` that is not plain JSON, or undefined when all of it is.
 * Plain JSON: null, booleans, finite numbers, strings, arrays and plain objects, without cycles, nested at
 * most `MAX_JSON_DEPTH` levels (the path of the first level past it is returned).
 */
export function findNonJson(value: unknown, path = '$', seen: Set<object> = new Set()): string | undefined {
  return locateNonJson(value, path, seen)?.path;
}

/**
 * A deep copy of a JSON value as JSON text gives it back (`-0` becomes `0`, as in every persistent store), so a
 * store (or a service) never shares objects with its callers. Copied by hand: `structuredClone` costs
 * microseconds even for a small record, which every call that returns one paid. Anything that is not JSON
 * inside (a Date, a typed array) is left to `structuredClone`.
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return (value === 0 ? 0 : value) as T;
  if (Array.isArray(value)) {
    const copy = new Array<unknown>(value.length);
    for (let index = 0; index < value.length; index++) copy[index] = cloneJson(value[index] as unknown);
    return copy as T;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return structuredClone(value);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const member = cloneJson((value as Record<string, unknown>)[key]);
    // An own `__proto__` key (JSON.parse makes one) must stay a key, not become the copy's prototype.
    if (key === '__proto__') Object.defineProperty(copy, key, { value: member, writable: true, enumerable: true, configurable: true });
    else copy[key] = member;
  }
  return copy as T;
}
