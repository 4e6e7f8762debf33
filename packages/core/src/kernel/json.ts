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

/** A deep copy of a JSON value, so a store never shares objects with its callers. */
export function cloneJson<T>(value: T): T {
  return structuredClone(value);
}
