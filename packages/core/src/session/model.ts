import { z } from 'zod';
import { jsonObjectSchema, jsonValueSchema } from './json-schema.js';
import type { Agree, Assert } from './type-agreement.js';
import type { CompletionReceipt, IngressFailureEntry, LifecycleRecord, LogEntry, LogRole, Phase, SessionCommand, StagedObject } from './types.js';
import { DEFAULT_INGRESS_POLICY } from './ingress-policy.js';

export type {
  CommandStatus,
  CompletionReceipt,
  IngressFailureEntry,
  LifecycleRecord,
  LogEntry,
  LogRole,
  Phase,
  SessionCommand,
  SessionRecord,
  SessionState,
  SessionSummary,
  SessionSummaryState,
  StagedObject,
  TranscriptEntry,
} from './types.js';

/** Where a session is in its life. Versions move with every lifecycle change of phase or state. */
export const PHASES = ['active', 'ingress_pending', 'ingress_in_progress', 'ingress_failed', 'complete'] as const;
/** Parses a phase name. */
export const phaseSchema = z.enum(PHASES);

/** Roles of the session log; `pending-object` entries come only from `stageObject`. */
export const LOG_ROLES = [
  'system-message',
  'system-error',
  'user-message',
  'assistant-message',
  'assistant-tool-call',
  'tool-result',
  'tool-error',
  'object',
  'pending-object',
] as const;
/** Parses a log role. */
export const logRoleSchema = z.enum(LOG_ROLES);

/** Roles a caller may append with `appendTranscript`. */
export const TRANSCRIPT_ROLES = LOG_ROLES.filter((role) => role !== 'pending-object') as Exclude<LogRole, 'pending-object'>[];

const nullableString = z.string().nullable();

/** The archive's acknowledgement that a session was committed as a session object. */
export const completionReceiptSchema = z.object({
  transactionId: nullableString.default(null),
  sessionObjectId: z.string(),
  sessionId: nullableString.default(null),
  sessionType: nullableString.default(null),
  createdAt: nullableString.default(null),
  committedAt: nullableString.default(null),
  nodeIds: z.record(z.string(), z.string()).default({}),
  objectIds: z.record(z.string(), z.string()).default({}),
});

/**
 * One command of a session's queue. Commands run one at a time, lowest `sequence` first. `enqueueOrder` is
 * the order the service decided enqueues in, across sessions; 0 on commands recorded before it existed.
 */
export const sessionCommandSchema = z.object({
  id: z.string(),
  sessionId: z.string(),
  sequence: z.number().int().min(1),
  enqueueOrder: z.number().int().min(0).default(0),
  kind: z.string(),
  payload: jsonValueSchema,
  status: z.enum(['pending', 'processing', 'complete']),
  cancelRequested: z.boolean(),
  outcome: jsonValueSchema.nullable(),
  createdAt: z.string(),
  processingStartedAt: nullableString,
  completedAt: nullableString,
  idempotencyId: z.string(),
  worker: z.string().optional(),
  leaseUntil: z.string().optional(),
});

/** One failed ingress attempt, as kept in `ingressFailures`. */
export const ingressFailureEntrySchema = z.object({
  attempt: z.number().int(),
  at: nullableString,
  stage: nullableString,
  code: nullableString,
  message: z.string(),
  roundsUsed: z.number().int().min(0).nullable(),
  contextTokens: z.number().int().min(0).nullable(),
  contextWindowTokens: z.number().int().min(0).nullable(),
});

/** A staged object's metadata as recorded (unsanitised; `object()` sanitises on the way out). */
export const stagedObjectSchema = z.object({
  pendingId: z.string(),
  fileName: z.string(),
  mediaType: z.string(),
  size: z.number().int().min(0),
  sha256: z.string(),
});

/** One entry of the session log; `boxId` is its 1-based position, shared by transcript text and objects. */
export const logEntrySchema = z.object({
  boxId: z.number().int().min(1),
  role: logRoleSchema,
  text: z.string(),
  at: z.string(),
  object: stagedObjectSchema.optional(),
});

/** The lifecycle part of a session as the reducer keeps it; `state` holds only whitelisted control keys. */
export const lifecycleRecordSchema = z.object({
  id: z.string(),
  phase: phaseSchema,
  startedAt: z.string(),
  updatedAt: z.string(),
  state: jsonObjectSchema,
  provenanceId: nullableString,
  version: z.number().int().min(1),
  lastUserMessageAt: nullableString,
  endedAt: nullableString,
  ingressFailureCount: z.number().int().min(0),
  ingressFailures: z.array(ingressFailureEntrySchema),
  ingressNextAttemptAt: nullableString,
});

/** A record at version 1 with no provenance, no failures and nothing pending: where every session starts. */
export function newLifecycleRecord(fields: Pick<LifecycleRecord, 'id' | 'phase' | 'startedAt' | 'updatedAt' | 'state'>): LifecycleRecord {
  // Named one by one: a spread followed by new keys takes V8's slow path (over 10 µs a record here).
  return {
    id: fields.id,
    phase: fields.phase,
    startedAt: fields.startedAt,
    updatedAt: fields.updatedAt,
    state: fields.state,
    provenanceId: null,
    version: 1,
    lastUserMessageAt: null,
    endedAt: null,
    ingressFailureCount: 0,
    ingressFailures: [],
    ingressNextAttemptAt: null,
  };
}

/**
 * The folded state of one session stream. The log is kept in chunks so that appending to a long
 * transcript copies one small chunk, not the whole log.
 */
export const sessionStreamStateSchema = z.object({
  sessionId: z.string(),
  record: lifecycleRecordSchema.nullable(),
  commands: z.array(sessionCommandSchema),
  log: z.array(z.array(logEntrySchema)),
  logSize: z.number().int().min(0),
  firstUserMessage: nullableString,
  receipt: completionReceiptSchema.nullable(),
  /** The idempotency key of the start that created the session (null: registered, or folded by release 0.1.0). */
  startKey: nullableString.default(null),
  /** The application's data as last given (null: never given, or folded by an earlier release). */
  data: jsonValueSchema.nullable().default(null),
  /** The time of the last event folded (null: folded by an earlier release; `record.updatedAt` stands in). */
  lastActivityAt: nullableString.default(null),
  /** Whether the completion kept the stream (the default policy) instead of handing it to the catalog and deleting it. */
  kept: z.boolean().default(false),
});
export type SessionStreamState = z.infer<typeof sessionStreamStateSchema>;

/** The folded catalog stream: receipts in the order recorded, unique by `sessionObjectId`. */
export const catalogStateSchema = z.object({ receipts: z.array(completionReceiptSchema) });
export type CatalogState = z.infer<typeof catalogStateSchema>;

/** One session a start key was bound to: the key's `incarnation`-th, and whether that session has ended. */
export const startKeyBindingSchema = z.object({ incarnation: z.number().int().min(1), sessionId: z.string(), released: z.boolean() });
export type StartKeyBinding = z.infer<typeof startKeyBindingSchema>;

/** The folded start-key stream: the sessions the key started, in incarnation order. */
export const startKeyStateSchema = z.object({ bindings: z.array(startKeyBindingSchema) });
export type StartKeyState = z.infer<typeof startKeyStateSchema>;

/** The default ingress policy's fields, by their former names; `DEFAULT_INGRESS_POLICY` (ingress-policy.ts) is the source. */
export const INGRESS_FAILURE_LIMIT = DEFAULT_INGRESS_POLICY.failureLimit;
export const INGRESS_RETRY_DELAY_SECONDS = DEFAULT_INGRESS_POLICY.retryDelaySeconds;
export const RETAINED_INGRESS_FAILURES = DEFAULT_INGRESS_POLICY.retainedFailures;
/** Longest `firstUserMessage` in a summary, in characters. */
export const FIRST_USER_MESSAGE_LIMIT = 512;

// The plain types of `types.ts` and the schemas here describe the same values.
export type SchemasAgreeWithTypes = [
  Assert<Agree<Phase, z.infer<typeof phaseSchema>>>,
  Assert<Agree<LogRole, z.infer<typeof logRoleSchema>>>,
  Assert<Agree<CompletionReceipt, z.infer<typeof completionReceiptSchema>>>,
  Assert<Agree<SessionCommand, z.infer<typeof sessionCommandSchema>>>,
  Assert<Agree<IngressFailureEntry, z.infer<typeof ingressFailureEntrySchema>>>,
  Assert<Agree<StagedObject, z.infer<typeof stagedObjectSchema>>>,
  Assert<Agree<LogEntry, z.infer<typeof logEntrySchema>>>,
  Assert<Agree<LifecycleRecord, z.infer<typeof lifecycleRecordSchema>>>,
];
