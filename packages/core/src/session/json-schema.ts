import { z } from 'zod';
import type { JsonObject, JsonValue } from '../kernel/json.js';

type Path = (string | number)[];

/**
 * The first problem that keeps `value` from being safe plain JSON: a value JSON cannot carry, a cycle,
 * or a `__proto__` key (which would rewrite prototypes when the data is spread or merged later).
 */
export function findJsonProblem(value: unknown, path: Path = [], seen: Set<object> = new Set()): { path: Path; message: string } | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path, message: 'expected a finite number' };
  if (typeof value !== 'object') return { path, message: `expected JSON, received ${typeof value}` };
  if (seen.has(value)) return { path, message: 'expected JSON, found a cycle' };
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = findJsonProblem(value[i], [...path, i], seen);
        if (problem) return problem;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return { path, message: 'expected a plain JSON object' };
    for (const key of Object.keys(value)) {
      if (key === '__proto__') return { path: [...path, key], message: 'the key "__proto__" is not allowed' };
      const problem = findJsonProblem((value as Record<string, unknown>)[key], [...path, key], seen);
      if (problem) return problem;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

/** True for a non-null, non-array object. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Any plain JSON value without `__proto__` keys. */
export const jsonValueSchema = z.custom<JsonValue>(() => true).superRefine((value, ctx) => {
  if (value === undefined) {
    ctx.addIssue({ code: 'custom', message: 'expected a JSON value, received undefined' });
    return;
  }
  const problem = findJsonProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
});

/** A plain JSON object without `__proto__` keys. */
export const jsonObjectSchema = z.custom<JsonObject>(() => true).superRefine((value, ctx) => {
  if (!isJsonObject(value)) {
    ctx.addIssue({ code: 'custom', message: `expected a JSON object, received ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}` });
    return;
  }
  const problem = findJsonProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
});
