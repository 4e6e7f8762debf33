import { z } from 'zod';
import { cloneJson, type JsonValue } from '../kernel/json.js';
import { SessionHistoryError, messages } from './errors.js';
import { isUuid } from './ids.js';
import {
  fastAppendTranscript,
  fastCheckpoint,
  fastCommandId,
  fastCommandOutcome,
  fastNewCommand,
  fastSessionId,
  fastStartSession,
  type FastPath,
} from './input-fast-paths.js';
import { isRfc3339 } from './rfc3339.js';
import { jsonInputObjectSchema, jsonInputValueSchema } from './json-schema.js';
import { completionReceiptSchema, phaseSchema, TRANSCRIPT_ROLES } from './model.js';
import type { Agree, Assert } from './type-agreement.js';
import type {
  AppendTranscriptInput,
  CheckpointInput,
  ClaimCommandInput,
  DataInput,
  CommandOutcomeInput,
  ExpectedVersionInput,
  IngressFailureInput,
  ListOptionsInput,
  NewCommandInput,
  NewObjectInput,
  RecordCompletionInput,
  RegisterSessionInput,
  RetryIngressInput,
  StartIngressInput,
  StartSessionInput,
} from './types.js';

export { isRfc3339 } from './rfc3339.js';

export type {
  AppendTranscriptInput,
  CheckpointInput,
  ClaimCommandInput,
  CommandOutcomeInput,
  ExpectedVersionInput,
  IngressFailureInput,
  ListOptionsInput,
  NewCommandInput,
  NewObjectInput,
  RecordCompletionInput,
  RegisterSessionInput,
  RetryIngressInput,
  StartIngressInput,
  StartSessionInput,
} from './types.js';

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

/** Input of `start`. */
export const startSessionSchema = z.object({
  idempotencyId,
  startedAt,
  sessionType: z.string(),
  durationMinutes: storedNumber.nullable().optional(),
  customPrompt: z.string().nullable().optional(),
  data: dataValue,
});
export type StartSession = z.output<typeof startSessionSchema>;

/** Input of `register`. */
export const registerSessionSchema = z.object({ id: sessionIdSchema, startedAt, state: jsonInputObjectSchema, data: dataInput });
export type RegisterSession = z.output<typeof registerSessionSchema>;

/** Input of `enqueue`; `payload` defaults to `{}`. */
export const newCommandSchema = z.object({ idempotencyId, kind: z.string(), payload: jsonInputValueSchema.default({}) });
export type NewCommand = z.output<typeof newCommandSchema>;

/** Input of `completeCommand`; `outcome` defaults to `{}`. */
export const commandOutcomeSchema = z.object({ outcome: jsonInputValueSchema.default({}), worker: z.string().min(1).max(255).optional() });

/** Input of an exclusive `claimCommand`. */
export const claimCommandSchema = z.object({ worker: z.string().min(1).max(255), leaseMs: z.number().int().min(1).max(2_147_483_647) });
export type ClaimCommand = z.output<typeof claimCommandSchema>;

/** Input of `checkpoint`, `requestIngress` and `complete`. */
export const checkpointSchema = z.object({
  expectedVersion,
  state: jsonInputObjectSchema.optional(),
  data: dataInput,
  userActivity: z.boolean().default(false),
});
export type Checkpoint = z.output<typeof checkpointSchema>;

/** Input of `completeIngress`. */
export const expectedVersionSchema = z.object({ expectedVersion });

/** Input of `retryIngress`. */
export const retryIngressSchema = z.object({ expectedVersion, state: jsonInputObjectSchema.optional(), data: dataInput });

/** Input of `startIngress`. */
export const startIngressSchema = z.object({ expectedVersion, provenanceId: z.string() });

/** Input of `failIngress`. */
export const ingressFailureSchema = z.object({
  expectedVersion,
  stage: z.string(),
  code: z.string().nullable().optional(),
  message: z.string(),
  roundsUsed: count,
  contextTokens: count,
  contextWindowTokens: count,
});
export type IngressFailure = z.output<typeof ingressFailureSchema>;

/** Input of `recordCompletion`. */
export const recordCompletionSchema = z.object({
  // An empty id would name no session object, and receipts are unique by it.
  sessionObjectId: z.string().min(1, 'expected a non-empty session object id'),
  commitReceipt: completionReceiptSchema.nullable().optional(),
  sessionId: sessionIdSchema.nullable().optional(),
  sessionType: z.string().nullable().optional(),
  createdAt: z.string().nullable().optional(),
});
export type RecordCompletion = z.output<typeof recordCompletionSchema>;

/** Input of `stageObject`; the file name defaults to `uploaded-object`. */
export const newObjectSchema = z.object({
  fileName: z.string().nullable().optional(),
  mediaType: z.string(),
  bytes: z.custom<Uint8Array>((value) => value instanceof Uint8Array, { message: 'expected a Uint8Array (or Buffer)' }),
});

/** Input of `appendTranscript`. */
export const appendTranscriptSchema = z.object({ role: z.enum(TRANSCRIPT_ROLES), text: z.string() });

/** Options of `list`. */
export const listOptionsSchema = z.object({ phase: phaseSchema.optional(), orderBy: z.enum(['updatedAt', 'lastActivityAt']).optional() }).default({});

const VERBATIM = new Set<string>(Object.values(messages));

/** The inputs of the calls made most often, parsed by hand when they are plainly well-formed (see `FastPath`). */
const FAST_PATHS: ReadonlyMap<z.ZodType, FastPath> = new Map<z.ZodType, FastPath>([
  [sessionIdSchema, fastSessionId],
  [commandIdSchema, fastCommandId],
  [startSessionSchema, fastStartSession],
  [newCommandSchema, fastNewCommand],
  [commandOutcomeSchema, fastCommandOutcome],
  [checkpointSchema, fastCheckpoint],
  [appendTranscriptSchema, fastAppendTranscript],
]);

/** The hand-written parse `parseInput` tries first for `schema`, if it has one (exported for the tests that hold it to the schema). */
export function fastPathFor(schema: z.ZodType): FastPath | undefined {
  return FAST_PATHS.get(schema);
}

/**
 * Parses a service input. A refusal is an `invalid_request` naming the field (`field: problem`); the
 * fixed texts of the service (`invalid session ID`, ...) are passed through unchanged. `name` prefixes
 * the path for scalar arguments; object arguments pass `''` so fields read as `expectedVersion`.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, name: string): z.output<S> {
  const fast = FAST_PATHS.get(schema)?.(value);
  if (fast !== undefined) return fast as z.output<S>;
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = [...(name === '' ? [] : [name]), ...(issue?.path ?? []).map(String)].join('.') || 'input';
  const message = issue?.message ?? 'invalid';
  throw SessionHistoryError.invalid(VERBATIM.has(message) ? message : `${path}: ${message}`, path);
}

// The plain input types of `types.ts` are what these schemas accept.
export type InputSchemasAgreeWithTypes = [
  Assert<Agree<StartSessionInput, z.input<typeof startSessionSchema>>>,
  Assert<Agree<RegisterSessionInput, z.input<typeof registerSessionSchema>>>,
  Assert<Agree<NewCommandInput, z.input<typeof newCommandSchema>>>,
  Assert<Agree<CommandOutcomeInput, z.input<typeof commandOutcomeSchema>>>,
  Assert<Agree<ClaimCommandInput, z.input<typeof claimCommandSchema>>>,
  Assert<Agree<CheckpointInput, z.input<typeof checkpointSchema>>>,
  Assert<Agree<ExpectedVersionInput, z.input<typeof expectedVersionSchema>>>,
  Assert<Agree<RetryIngressInput, z.input<typeof retryIngressSchema>>>,
  Assert<Agree<StartIngressInput, z.input<typeof startIngressSchema>>>,
  Assert<Agree<IngressFailureInput, z.input<typeof ingressFailureSchema>>>,
  Assert<Agree<RecordCompletionInput, z.input<typeof recordCompletionSchema>>>,
  Assert<Agree<NewObjectInput, z.input<typeof newObjectSchema>>>,
  Assert<Agree<AppendTranscriptInput, z.input<typeof appendTranscriptSchema>>>,
  Assert<Agree<ListOptionsInput | undefined, z.input<typeof listOptionsSchema>>>,
];
