/** Any value that survives `JSON.stringify` → `JSON.parse` unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object (the shape of most event data and states). */
export type JsonObject = { [key: string]: JsonValue };

/**
 * Returns the path of the first part of `value` that is not plain JSON, or undefined when all of it is.
 * Plain JSON: null, booleans, finite numbers, strings, arrays and plain objects, without cycles.
 */
export function findNonJson(value: unknown, path = '$', seen: Set<object> = new Set()): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : path;
  if (typeof value !== 'object') return path;
  if (seen.has(value)) return path;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const bad = findNonJson(value[i], `${path}[${i}]`, seen);
        if (bad !== undefined) return bad;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return path;
    for (const key of Object.keys(value)) {
      const bad = findNonJson((value as Record<string, unknown>)[key], `${path}.${key}`, seen);
      if (bad !== undefined) return bad;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

/** A deep copy of a JSON value, so a store never shares objects with its callers. */
export function cloneJson<T>(value: T): T {
  return structuredClone(value);
}
