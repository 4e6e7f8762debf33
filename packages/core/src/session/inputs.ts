import { z } from 'zod';
import { cloneJson, type JsonValue } from '../kernel/json.js';
import { SessionHistoryError, messages } from './errors.js';
import { isUuid } from './ids.js';
import { isRfc3339 } from './rfc3339.js';
import { jsonInputObjectSchema, jsonInputValueSchema } from './json-schema.js';
import { listQuerySchema } from './list-query.js';
import { completionReceiptSchema, phaseSchema, TRANSCRIPT_ROLES } from './model.js';
import type { DataInput } from './types.js';

export { isRfc3339 } from './rfc3339.js';

// The application's data: checked when the write is decided (a function form needs the current value), so any
// value passes here. `nextData` (data.ts) refuses what is not plain JSON or what the service's validator refuses.
const dataValue = z.custom<JsonValue>(() => true).optional();
const dataInput = z.custom<DataInput<JsonValue>>(() => true).optional();
const idempotencyId = z.string().refine((value) => value.length > 0 && Buffer.byteLength(value, 'utf8') <= 255, { message: messages.idempotencyId });
const startedAt = z.string().refine(isRfc3339, { message: messages.startedAt });
const expectedVersion = z.number().int().min(0);
// A number the service records reads back from any store as JSON text gives it (`cloneJson`: `-0` as `0`).
const asStored = (value: number): number => cloneJson(value);
const storedNumber = z.number().transform(asStored);
const count = z.number().int().min(0).transform(asStored).nullable().optional();

/** A session id argument: a UUID, returned in lowercase. */
export const sessionIdSchema = z
  .string()
  .refine(isUuid, { message: messages.invalidSessionId })
  .transform((value) => value.toLowerCase());

/** A command id argument. */
export const commandIdSchema = z.string().min(1).max(255);

/** A staged object's id: `pending:N` with N ≥ 1. */
export const pendingIdSchema = z
  .string()
  .regex(/^pending:[0-9]+$/, { message: messages.objectIdForm })
  .transform((value) => Number(value.slice('pending:'.length)))
  .refine((value) => Number.isSafeInteger(value) && value > 0, { message: messages.objectIdForm });

/**
 * The zod schema of each input of the service, by the method that takes it (`checkpoint`'s also serves
 * `requestIngress` and `complete`): the call parses its input with it, and the input's type is its `z.input`.
 */
export const inputSchemas = {
  start: z.object({
    idempotencyId,
    startedAt,
    sessionType: z.string(),
    durationMinutes: storedNumber.nullable().optional(),
    customPrompt: z.string().nullable().optional(),
    data: dataValue,
  }),
  register: z.object({ id: sessionIdSchema, startedAt, state: jsonInputObjectSchema, data: dataInput }),
  list: z.object({ phase: phaseSchema.optional(), orderBy: z.enum(['updatedAt', 'lastActivityAt']).optional() }).default({}),
  listPage: listQuerySchema,
  enqueue: z.object({ idempotencyId, kind: z.string(), payload: jsonInputValueSchema.default({}) }),
  claimCommand: z.object({ worker: z.string().min(1).max(255), leaseMs: z.number().int().min(1).max(2_147_483_647) }),
  completeCommand: z.object({ outcome: jsonInputValueSchema.default({}), worker: z.string().min(1).max(255).optional() }),
  appendTranscript: z.object({ role: z.enum(TRANSCRIPT_ROLES), text: z.string() }),
  stageObject: z.object({
    fileName: z.string().nullable().optional(),
    mediaType: z.string(),
    bytes: z.custom<Uint8Array>((value) => value instanceof Uint8Array, { message: 'expected a Uint8Array (or Buffer)' }),
  }),
  checkpoint: z.object({ expectedVersion, state: jsonInputObjectSchema.optional(), data: dataInput, userActivity: z.boolean().default(false) }),
  startIngress: z.object({ expectedVersion, provenanceId: z.string() }),
  completeIngress: z.object({ expectedVersion }),
  failIngress: z.object({
    expectedVersion,
    stage: z.string(),
    code: z.string().nullable().optional(),
    message: z.string(),
    roundsUsed: count,
    contextTokens: count,
    contextWindowTokens: count,
  }),
  retryIngress: z.object({ expectedVersion, state: jsonInputObjectSchema.optional(), data: dataInput }),
  recordCompletion: z.object({
    // Not empty: receipts are unique by it, and an empty one would name no session object.
    sessionObjectId: z.string().min(1, 'expected a non-empty session object id'),
    commitReceipt: completionReceiptSchema.nullable().optional(),
    sessionId: sessionIdSchema.nullable().optional(),
    sessionType: z.string().nullable().optional(),
    createdAt: z.string().nullable().optional(),
  }),
};

/**
 * Input of `start`: `idempotencyId` (1..255 UTF-8 bytes; a start with the key of a live session returns that
 * session), `startedAt` (RFC 3339 date-time with an offset), and `data`, the application's initial data (typed `S`,
 * checked by the service's `validateData`).
 */
export type StartSessionInput<S = JsonValue> = Omit<z.input<typeof inputSchemas.start>, 'data'> & { data?: S | undefined };
/** Input of `register`: `id` is the session's UUID, chosen by the caller. */
export type RegisterSessionInput<S = JsonValue> = Omit<z.input<typeof inputSchemas.register>, 'data'> & { data?: DataInput<S> | undefined };
/** Options of `list`: most recent first by `updatedAt` (lifecycle changes, the default) or by `lastActivityAt` (any event). */
export type ListOptionsInput = NonNullable<z.input<typeof inputSchemas.list>>;
/** Input of `enqueue`; `payload` defaults to `{}`. */
export type NewCommandInput = z.input<typeof inputSchemas.enqueue>;
/**
 * Input of an exclusive `claimCommand`: who claims (`worker`, 1..255 characters, the same on every renewal), and for
 * how long the claim excludes other workers without a renewal (`leaseMs`, a positive integer of milliseconds).
 */
export type ClaimCommandInput = z.input<typeof inputSchemas.claimCommand>;
/**
 * Input of `completeCommand`; `outcome` defaults to `{}`. With `worker`, refused (`state_conflict`) when another
 * worker has claimed the command since this one did.
 */
export type CommandOutcomeInput = z.input<typeof inputSchemas.completeCommand>;
/** Input of `appendTranscript`. */
export type AppendTranscriptInput = z.input<typeof inputSchemas.appendTranscript>;
/** Input of `stageObject`; the file name defaults to `uploaded-object`. */
export type NewObjectInput = z.input<typeof inputSchemas.stageObject>;
/**
 * Input of `checkpoint`, `requestIngress` and `complete`. `state`, when given, replaces the whole control state
 * (left out: kept); `data`, when given, replaces the application's data (left out: kept).
 */
export type CheckpointInput<S = JsonValue> = Omit<z.input<typeof inputSchemas.checkpoint>, 'data'> & { data?: DataInput<S> | undefined };
/** Input of `startIngress`. */
export type StartIngressInput = z.input<typeof inputSchemas.startIngress>;
/** Input of `completeIngress`. */
export type ExpectedVersionInput = z.input<typeof inputSchemas.completeIngress>;
/** Input of `failIngress`. */
export type IngressFailureInput = z.input<typeof inputSchemas.failIngress>;
/** Input of `retryIngress`. */
export type RetryIngressInput<S = JsonValue> = Omit<z.input<typeof inputSchemas.retryIngress>, 'data'> & { data?: DataInput<S> | undefined };
/** Input of `recordCompletion`: `sessionObjectId` (not empty) is the session object's id; receipts are unique by it. */
export type RecordCompletionInput = z.input<typeof inputSchemas.recordCompletion>;
/** A receipt as `recordCompletion` accepts it: every field but `sessionObjectId` may be left out. */
export type CompletionReceiptInput = z.input<typeof completionReceiptSchema>;

// The parsed inputs the decisions take.
export type StartSession = z.output<typeof inputSchemas.start>;
export type RegisterSession = z.output<typeof inputSchemas.register>;
export type NewCommand = z.output<typeof inputSchemas.enqueue>;
export type ClaimCommand = z.output<typeof inputSchemas.claimCommand>;
export type Checkpoint = z.output<typeof inputSchemas.checkpoint>;
export type IngressFailure = z.output<typeof inputSchemas.failIngress>;
export type RecordCompletion = z.output<typeof inputSchemas.recordCompletion>;

const VERBATIM = new Set<string>(Object.values(messages));

/**
 * Parses a service input with its schema. A refusal is an `invalid_request` naming the field (`field: problem`);
 * the fixed texts of the service (`invalid session ID`, ...) are passed through unchanged. `name` prefixes the
 * path for scalar arguments; object arguments pass `''` so fields read as `expectedVersion`.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, name: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = [...(name === '' ? [] : [name]), ...(issue?.path ?? []).map(String)].join('.') || 'input';
  const message = issue?.message ?? 'invalid';
  throw SessionHistoryError.invalid(VERBATIM.has(message) ? message : `${path}: ${message}`, path);
}
