import { z } from 'zod';
import { cloneJson, MAX_JSON_DEPTH, type JsonObject, type JsonValue } from '../kernel/json.js';

type Path = (string | number)[];

/**
 * The first problem that keeps `value` from being safe plain JSON: a value JSON cannot carry, a cycle,
 * a `__proto__` key (which would rewrite prototypes when the data is spread or merged later), nesting
 * deeper than `MAX_JSON_DEPTH` (reported at `value` itself: the deep path would fill the message), or
 * a getter or Proxy of the caller's that throws while it is read.
 */
export function findJsonProblem(value: unknown, path: Path = [], seen: Set<object> = new Set()): { path: Path; message: string } | undefined {
  try {
    const problem = walk(value, seen, 0);
    return problem && { path: [...path, ...problem.path], message: problem.message };
  } catch (error) {
    if (error instanceof TooDeep) return { path, message: `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` };
    return { path, message: `could not be read: ${error instanceof Error ? error.message : String(error)}` };
  }
}

class TooDeep extends Error {}

/**
 * The first problem below `value`, its path relative to `value`. The path is built on the way back up from a
 * problem, so a walk over good JSON (nearly every one) allocates no path per member.
 */
function walk(value: unknown, seen: Set<object>, depth: number): { path: Path; message: string } | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path: [], message: 'expected a finite number' };
  if (typeof value !== 'object') return { path: [], message: `expected JSON, received ${typeof value}` };
  if (seen.has(value)) return { path: [], message: 'expected JSON, found a cycle' };
  if (depth >= MAX_JSON_DEPTH) throw new TooDeep();
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = walk(value[i], seen, depth + 1);
        if (problem) return within(i, problem);
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return { path: [], message: 'expected a plain JSON object' };
    for (const key of Object.keys(value)) {
      if (key === '__proto__') return { path: [key], message: 'the key "__proto__" is not allowed' };
      const problem = walk((value as Record<string, unknown>)[key], seen, depth + 1);
      if (problem) return within(key, problem);
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

function within(step: string | number, problem: { path: Path; message: string }): { path: Path; message: string } {
  problem.path.unshift(step);
  return problem;
}

/** True for a non-null, non-array object. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Any plain JSON value without `__proto__` keys. */
export const jsonValueSchema = z
  .custom<JsonValue>(() => true)
  .superRefine((value, ctx) => {
    if (value === undefined) {
      ctx.addIssue({ code: 'custom', message: 'expected a JSON value, received undefined' });
      return;
    }
    const problem = findJsonProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
  });

/** A plain JSON object without `__proto__` keys. */
export const jsonObjectSchema = z
  .custom<JsonObject>(() => true)
  .superRefine((value, ctx) => {
    if (!isJsonObject(value)) {
      ctx.addIssue({ code: 'custom', message: `expected a JSON object, received ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}` });
      return;
    }
    const problem = findJsonProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
  });

/**
 * A caller's JSON value as the service keeps it: checked, then copied as a store gives it back (`-0` reads as
 * `0`), so what the service holds in memory equals what it reads after a reopen, and a caller that changes its
 * object afterwards changes nothing recorded.
 */
export const jsonInputValueSchema = jsonValueSchema.transform((value) => cloneJson(value));

/** A caller's JSON object as the service keeps it (see `jsonInputValueSchema`). */
export const jsonInputObjectSchema = jsonObjectSchema.transform((value) => cloneJson(value));
