import { z } from 'zod';
import { readJson, type JsonObject, type JsonValue } from '../kernel/json.js';

/** True for a non-null, non-array object. */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `value` read by `readJson` as the service reads what it records, also refusing a `__proto__` key (a control
 * state is merged by assigning its keys, where one would rewrite a prototype): the value, or with `copy` its copy,
 * or `z.NEVER` with the problem added to `ctx`.
 */
function readRecorded<T>(value: T, ctx: z.RefinementCtx, copy: boolean, object: boolean): T {
  if (object && !isJsonObject(value)) {
    ctx.addIssue({ code: 'custom', message: `expected a JSON object, received ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}` });
    return z.NEVER;
  }
  const read = readJson(value, { copy, refuseProtoKeys: true });
  if (read.problem === undefined) return read.value as T;
  ctx.addIssue({ code: 'custom', message: read.problem.message, path: [...read.problem.path] });
  return z.NEVER;
}

/** Any plain JSON value without `__proto__` keys. */
export const jsonValueSchema = z.custom<JsonValue>().superRefine((value, ctx) => {
  readRecorded(value, ctx, false, false);
});

/** A plain JSON object without `__proto__` keys. */
export const jsonObjectSchema = z.custom<JsonObject>().superRefine((value, ctx) => {
  readRecorded(value, ctx, false, true);
});

/**
 * A caller's JSON value as the service keeps it: checked and copied in one walk, as a store gives it back (`-0`
 * reads as `0`), so what the service holds in memory equals what it reads after a reopen, and a caller that
 * changes its object afterwards changes nothing recorded.
 */
export const jsonInputValueSchema = z.custom<JsonValue>().transform((value, ctx) => readRecorded(value, ctx, true, false));

/** A caller's JSON object as the service keeps it (see `jsonInputValueSchema`). */
export const jsonInputObjectSchema = z.custom<JsonObject>().transform((value, ctx) => readRecorded(value, ctx, true, true));
