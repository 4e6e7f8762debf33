/**
 * Deepest nesting of arrays and objects accepted in event data and snapshot states: a value with this many
 * levels is stored, one with more is `InvalidInputError`. Bounded so every store, and every reader that
 * parses or walks the JSON recursively, handles all it accepts without running out of stack.
 */
export const MAX_JSON_DEPTH = 256;

/** Why a value is not plain JSON: the path of the first bad part, and whether it is a value JSON cannot carry or nests too deep. */
export interface JsonProblem {
  path: string;
  reason: 'not_json' | 'too_deep';
}

/** The first part of `value` that is not plain JSON (see `findNonJson`) and why; `depth` is the number of arrays and objects around `value`. */
export function locateNonJson(value: unknown, path = '$', seen: Set<object> = new Set(), depth = 0): JsonProblem | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path, reason: 'not_json' };
  if (typeof value !== 'object') return { path, reason: 'not_json' };
  if (seen.has(value)) return { path, reason: 'not_json' };
  // Checked before going in, so the walk itself never recurses deeper than the limit.
  if (depth >= MAX_JSON_DEPTH) return { path, reason: 'too_deep' };
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const bad = locateNonJson(value[i], `${path}[${i}]`, seen, depth + 1);
        if (bad !== undefined) return bad;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return { path, reason: 'not_json' };
    for (const key of Object.keys(value)) {
      const bad = locateNonJson((value as Record<string, unknown>)[key], `${path}.${key}`, seen, depth + 1);
      if (bad !== undefined) return bad;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}
