import type { JsonObject, JsonValue } from '@sessionfold/core/kernel';
import { readJson } from '@sessionfold/core/store-kit';
import { z } from 'zod';

export type { JsonObject, JsonValue } from '@sessionfold/core/kernel';

/** Adds the first part of `value` that is not plain JSON (the kernel's `readJson`) to `ctx`, at its own path. */
function refuseNonJson(value: unknown, ctx: z.RefinementCtx): void {
  const { problem } = readJson(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: [...problem.path] });
}

/** Any JSON value; the first non-JSON part is reported at its own path. */
export const jsonValueSchema: z.ZodType<JsonValue> = z.custom<JsonValue>().superRefine(refuseNonJson);

/** A JSON object whose contents are opaque to this package (tool arguments, runtime and scheduler state). */
export const jsonObjectSchema: z.ZodType<JsonObject> = z.record(z.string(), z.unknown()).superRefine(refuseNonJson) as unknown as z.ZodType<JsonObject>;
