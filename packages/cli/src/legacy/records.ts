import type { LifecycleRecord, SessionCommand } from '@sessionfold/core';
import { controlState, ingressFailureEntrySchema, lifecycleRecordSchema, sessionCommandSchema } from '@sessionfold/core/session';
import type { JsonValue } from '@sessionfold/core/kernel';
import { z } from 'zod';

/**
 * Control-state key names of the legacy service and this project's names for them. Only the service's own fields
 * are renamed: the top level of the state and of its `historyIngress`, the two levels its control state is made of.
 */
export const LEGACY_KEY_NAMES: Readonly<Record<string, string>> = Object.freeze({
  kwebPlan: 'archivePlan',
  rustLibSessionId: 'libSessionId',
  chatendText: 'transcriptText',
});

/**
 * `state` with the legacy names of the service's own keys replaced, at its top level and inside `historyIngress`.
 * Values are the caller's data and left as they are: a `channel` holding a `chatendText` keeps it.
 */
export function renameLegacyKeys(state: Record<string, unknown>): Record<string, unknown> {
  const output: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(state)) {
    const name = LEGACY_KEY_NAMES[key] ?? key;
    output[name] = name === 'historyIngress' && isObject(item) ? renameLegacyKeys(item) : item;
  }
  return output;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

const nullableString = z.string().nullable().default(null);

/** The legacy lifecycle record as that service wrote it (snake_case fields). */
const legacyLifecycleSchema = z.object({
  id: z.string(),
  phase: z.string(),
  started_at: z.string(),
  updated_at: z.string(),
  state: z.record(z.string(), z.unknown()).default({}),
  provenance_id: nullableString,
  version: z.number().int().min(1),
  last_user_message_at: nullableString,
  ended_at: nullableString,
  ingress_failure_count: z.number().int().min(0).default(0),
  ingress_failures: z.array(z.unknown()).default([]),
  ingress_next_attempt_at: nullableString,
});

/** The legacy command record (camelCase, with `conversationId` for the session id). */
const legacyCommandSchema = z.object({
  id: z.string(),
  conversationId: z.string().optional(),
  sequence: z.number().int().min(1),
  kind: z.string(),
  payload: z.unknown().default({}),
  status: z.enum(['pending', 'processing', 'complete']),
  cancelRequested: z.boolean().default(false),
  outcome: z.unknown().default(null),
  createdAt: z.string(),
  processingStartedAt: nullableString,
  completedAt: nullableString,
  idempotencyId: z.string(),
});

/** A failure entry in the legacy shape; fields it lacks (older entries have only attempt and message) become null. */
function failureEntry(value: unknown) {
  const entry = (value ?? {}) as Record<string, unknown>;
  const pick = (key: string) => (entry[key] === undefined ? null : entry[key]);
  return ingressFailureEntrySchema.parse({
    attempt: entry['attempt'],
    at: pick('at'),
    stage: pick('stage'),
    code: pick('code'),
    message: typeof entry['message'] === 'string' ? entry['message'] : '',
    roundsUsed: pick('roundsUsed'),
    contextTokens: pick('contextTokens'),
    contextWindowTokens: pick('contextWindowTokens'),
  });
}

/**
 * The lifecycle record a legacy lifecycle value becomes: the state's own keys renamed, then the control-state whitelist
 * applied to the state (as the service applies it on every write), every other field carried as it was.
 */
export function lifecycleFromLegacy(value: unknown, controlStateKeys?: readonly string[]): LifecycleRecord {
  const legacy = legacyLifecycleSchema.parse(value);
  return lifecycleRecordSchema.parse({
    id: legacy.id.toLowerCase(),
    phase: legacy.phase,
    startedAt: legacy.started_at,
    updatedAt: legacy.updated_at,
    state: controlState(renameLegacyKeys(legacy.state) as JsonValue, controlStateKeys),
    provenanceId: legacy.provenance_id,
    version: legacy.version,
    lastUserMessageAt: legacy.last_user_message_at,
    endedAt: legacy.ended_at,
    ingressFailureCount: legacy.ingress_failure_count,
    ingressFailures: legacy.ingress_failures.map(failureEntry),
    ingressNextAttemptAt: legacy.ingress_next_attempt_at,
  });
}

/** The command a legacy command value becomes, with its own id, sequence, status and times. */
export function commandFromLegacy(value: unknown, sessionId: string): SessionCommand {
  // The payload is the caller's own data: only the record's field is renamed, never keys inside the payload.
  const { conversationId: _legacySessionId, ...legacy } = legacyCommandSchema.parse(value);
  return sessionCommandSchema.parse({ ...legacy, sessionId, enqueueOrder: 0 });
}
