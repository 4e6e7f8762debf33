import { z } from 'zod';
import { usageError } from './exit-codes.js';

/** Parses a command-line value with `schema`, turning a failure into a usage error (exit 2) naming `what`. */
export function parseArg<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  // A bad member of a command's options is named as the option the user wrote, with the value given for it.
  const key = issue?.path[0];
  if (typeof key === 'string' && typeof value === 'object' && value !== null) {
    const option = `--${key.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
    throw usageError(`${option}: ${issue?.message ?? 'invalid value'} (got ${JSON.stringify((value as Record<string, unknown>)[key])})`);
  }
  throw usageError(`${what}: ${issue?.message ?? 'invalid value'} (got ${JSON.stringify(value)})`);
}

/** A whole number ≥ `min` given as text. */
export const integerText = (min: number) =>
  z.string().regex(/^\d+$/, 'expected a whole number').transform(Number).pipe(z.number().int().min(min).max(Number.MAX_SAFE_INTEGER));

/** A session id: a UUID (the session's own id) or a completed session's session object id. */
export const sessionIdText = z.string().min(1, 'expected a session id').max(255);

/** A stream id as the port allows it. */
export const streamIdText = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'not a valid stream id');
