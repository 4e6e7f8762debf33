import { z } from 'zod';

/** A value JSON can carry: what `JSON.parse` returns and what the snapshot writer accepts. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A JSON object (string keys, JSON values). */
export type JsonObject = { [key: string]: JsonValue };

/** Where a value stops being JSON: the relative path and why, or `undefined` when all of it is JSON. */
export function findNonJson(value: unknown): { path: (string | number)[]; reason: string } | undefined {
  return visit(value, [], new Set());
}

function visit(value: unknown, path: (string | number)[], ancestors: Set<object>): { path: (string | number)[]; reason: string } | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : { path, reason: `${String(value)} is not a JSON number` };
    case 'object': {
      if (value === null) return undefined;
      if (ancestors.has(value)) return { path, reason: 'a circular reference is not JSON' };
      ancestors.add(value);
      try {
        if (Array.isArray(value)) {
          for (let i = 0; i < value.length; i++) {
            const bad = visit(value[i], [...path, i], ancestors);
            if (bad) return bad;
          }
          return undefined;
        }
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) return { path, reason: 'only plain objects are JSON' };
        for (const [key, item] of Object.entries(value)) {
          const bad = visit(item, [...path, key], ancestors);
          if (bad) return bad;
        }
        return undefined;
      } finally {
        ancestors.delete(value);
      }
    }
    default:
      return { path, reason: `${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`} is not JSON` };
  }
}

/** Any JSON value; the first non-JSON part is reported at its own path. */
export const jsonValueSchema: z.ZodType<JsonValue> = z.unknown().superRefine((value, ctx) => {
  const bad = findNonJson(value);
  if (bad) ctx.addIssue({ code: 'custom', message: bad.reason, path: bad.path });
}) as unknown as z.ZodType<JsonValue>;

/** A JSON object whose contents are opaque to this package (tool arguments, runtime and scheduler state). */
export const jsonObjectSchema: z.ZodType<JsonObject> = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const bad = findNonJson(value);
  if (bad) ctx.addIssue({ code: 'custom', message: bad.reason, path: bad.path });
}) as unknown as z.ZodType<JsonObject>;
