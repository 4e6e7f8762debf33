import { z } from 'zod';
import type { JsonValue } from '../kernel/json.js';
import { jsonObjectSchema, jsonValueSchema } from './json-schema.js';
import { completionReceiptSchema, ingressFailureEntrySchema, lifecycleRecordSchema, logRoleSchema, sessionCommandSchema, stagedObjectSchema } from './model.js';

// Every event carries `at`, the service clock's time of the decision, so a replay never consults a clock.
const at = z.string();
const nullableString = z.string().nullable();
// The application's data as the write gave it; absent on events that left it as it was (and on every older event).
const data = jsonValueSchema.optional();

/**
 * The data of every event type, by type. Events record decisions (times, ids, attempt numbers, the
 * resulting values), never inputs to decide again, so an old journal replays to the old record.
 */
export const sessionEventSchemas = {
  /** A session created by `start`: version 1, phase active, `updatedAt` = `startedAt`. */
  SessionStarted: z.object({ at, startedAt: z.string(), state: jsonObjectSchema, data }),
  /** A session created by `register`. */
  SessionRegistered: z.object({ at, startedAt: z.string(), state: jsonObjectSchema, data }),
  /** New control state; `userActivity` stamps `lastUserMessageAt`; `data` absent = the application's data unchanged. */
  SessionCheckpointed: z.object({ at, state: jsonObjectSchema, userActivity: z.boolean(), data }),
  /** Phase ingress_pending, with the resulting provenance and next attempt; `state` absent = unchanged. */
  IngressRequested: z.object({
    at,
    state: jsonObjectSchema.optional(),
    provenanceId: nullableString,
    nextAttemptAt: nullableString,
    data,
  }),
  /** Phase ingress_in_progress under `provenanceId`. */
  IngressStarted: z.object({ at, provenanceId: z.string() }),
  /** A failed attempt: its number, whether it ends the retries, when to try next, and how many failures to keep. */
  IngressFailed: z.object({
    at,
    attempt: z.number().int().min(1),
    terminal: z.boolean(),
    nextAttemptAt: nullableString,
    failure: ingressFailureEntrySchema,
    retainedFailures: z.number().int().min(1),
  }),
  /** A failed ingress sent back to ingress_pending with its failure count reset. */
  IngressRetried: z.object({ at, state: jsonObjectSchema, data }),
  /** An interrupted attempt sent back to ingress_pending. */
  IngressReleased: z.object({ at, resetFailureCount: z.boolean(), retainedFailures: z.number().int().min(1) }),
  /**
   * Phase complete; `receipt` is what the catalog must hold (null: no session object was named). `kept`: the stream
   * stays, readable and closed to writes, until `deleteSession`; absent or false: it is deleted once the receipt is in
   * the catalog (the archive policy, and every completion recorded before the policies existed).
   */
  SessionCompleted: z.object({ at, state: jsonObjectSchema, receipt: completionReceiptSchema.nullable(), kept: z.boolean().optional(), data }),
  CommandEnqueued: z.object({ command: sessionCommandSchema }),
  /** Processing from `at`; with `worker`, exclusively that worker's until `leaseUntil` (absent on claims without a worker). */
  CommandClaimed: z.object({ at, commandId: z.string(), worker: z.string().optional(), leaseUntil: z.string().optional() }),
  CommandCompleted: z.object({ at, commandId: z.string(), outcome: jsonValueSchema }),
  CommandCancelRequested: z.object({ at, commandId: z.string() }),
  TranscriptAppended: z.object({ at, role: logRoleSchema.exclude(['pending-object']), text: z.string() }),
  /**
   * A session carried over from another system as it was there: its whole lifecycle record, version, phase,
   * failures and next attempt included (so it need not start at version 1). `source` says where it came from.
   * Ignored when the session already exists.
   */
  SessionImported: z.object({ at, source: z.string(), record: lifecycleRecordSchema }),
  /** A command carried over with its own id, sequence, status and times; ignored when its id is already queued. */
  CommandImported: z.object({ at, command: sessionCommandSchema }),
  ObjectStaged: stagedObjectSchema.extend({ at }),
} as const;

/** The one event type of the `catalog` stream. */
export const catalogEventSchemas = {
  CompletionRecorded: z.object({ receipt: completionReceiptSchema }),
} as const;

/** Events of a start-key stream (`start-key-<uuid>`), which gives each start of the key its own session id. */
export const startKeyEventSchemas = {
  /** The key's `incarnation`-th session is `sessionId`; a start with the key returns it while it lives. */
  StartKeyBound: z.object({ at, idempotencyId: z.string(), incarnation: z.number().int().min(1), sessionId: z.string() }),
  /** The session of `incarnation` completed; its stream is deleted next, and the next start gets a new session. */
  StartKeyReleased: z.object({ at, incarnation: z.number().int().min(1), sessionId: z.string() }),
} as const;

type Schemas = typeof sessionEventSchemas;
export type SessionEventType = keyof Schemas;
export type SessionEventData<T extends SessionEventType> = z.infer<Schemas[T]>;

/** A session-stream event: `{ type, data }` with the data typed by its type. */
export type SessionEvent = { [T in SessionEventType]: { type: T; data: SessionEventData<T> } }[SessionEventType];
export type CatalogEvent = { type: 'CompletionRecorded'; data: z.infer<(typeof catalogEventSchemas)['CompletionRecorded']> };
type StartKeySchemas = typeof startKeyEventSchemas;
/** A start-key-stream event. */
export type StartKeyEvent = { [T in keyof StartKeySchemas]: { type: T; data: z.infer<StartKeySchemas[T]> } }[keyof StartKeySchemas];

/** Every session event type name. */
export const SESSION_EVENT_TYPES = Object.keys(sessionEventSchemas) as SessionEventType[];

/** Lifecycle events: the only ones that move a session's version. */
export const LIFECYCLE_EVENT_TYPES: readonly SessionEventType[] = [
  'SessionStarted',
  'SessionRegistered',
  'SessionCheckpointed',
  'IngressRequested',
  'IngressStarted',
  'IngressFailed',
  'IngressRetried',
  'IngressReleased',
  'SessionCompleted',
  'SessionImported',
];

/** Builds a typed session event (the compiler checks the data against its type). */
export function sessionEvent<T extends SessionEventType>(type: T, data: SessionEventData<T>): SessionEvent {
  return { type, data } as SessionEvent;
}

/**
 * Parses stored event data against its type's schema. Returns an error text instead of throwing, so the
 * caller decides how to report it (the reducer reports corruption naming the stream and revision).
 */
export function parseSessionEvent(type: string, data: JsonValue): SessionEvent | string {
  if (!Object.hasOwn(sessionEventSchemas, type)) return `unknown session event type ${JSON.stringify(type)}`;
  const parsed = sessionEventSchemas[type as SessionEventType].safeParse(data);
  if (!parsed.success) return `malformed ${type} event: ${describeZodError(parsed.error)}`;
  return { type, data: parsed.data } as SessionEvent;
}

/** Parses stored catalog event data, or returns an error text. */
export function parseCatalogEvent(type: string, data: JsonValue): CatalogEvent | string {
  if (type !== 'CompletionRecorded') return `unknown catalog event type ${JSON.stringify(type)}`;
  const parsed = catalogEventSchemas.CompletionRecorded.safeParse(data);
  if (!parsed.success) return `malformed ${type} event: ${describeZodError(parsed.error)}`;
  return { type, data: parsed.data };
}

/** Parses stored start-key event data, or returns an error text. */
export function parseStartKeyEvent(type: string, data: JsonValue): StartKeyEvent | string {
  if (!Object.hasOwn(startKeyEventSchemas, type)) return `unknown start-key event type ${JSON.stringify(type)}`;
  const parsed = startKeyEventSchemas[type as keyof StartKeySchemas].safeParse(data);
  if (!parsed.success) return `malformed ${type} event: ${describeZodError(parsed.error)}`;
  return { type, data: parsed.data } as StartKeyEvent;
}

/** `path: message` of a zod error's first issue. */
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}
