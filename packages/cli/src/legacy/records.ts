import type { LifecycleRecord, SessionCommand } from '@sessionfold/core';
import { controlState, ingressFailureEntrySchema, lifecycleRecordSchema, sessionCommandSchema } from '@sessionfold/core/session';
import type { JsonValue } from '@sessionfold/core/kernel';
import { z } from 'zod';

/** Control-state key names of the legacy service and this project's names for them, renamed at every level. */
export const LEGACY_KEY_NAMES: Readonly<Record<string, string>> = Object.freeze({
  kwebPlan: 'archivePlan',
  rustLibSessionId: 'libSessionId',
  chatendText: 'transcriptText',
});

/** `value` with every legacy key renamed, in every nested object and array. */
export function renameLegacyKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(renameLegacyKeys);
  if (value === null || typeof value !== 'object') return value;
  const output: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) output[LEGACY_KEY_NAMES[key] ?? key] = renameLegacyKeys(item);
  return output;
}

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
 * The lifecycle record a legacy lifecycle value becomes: keys renamed, then the control-state whitelist
 * applied to the state (as the service applies it on every write), every other field carried as it was.
 */
export function lifecycleFromLegacy(value: unknown, controlStateKeys?: readonly string[]): LifecycleRecord {
  const legacy = legacyLifecycleSchema.parse(renameLegacyKeys(value));
  return lifecycleRecordSchema.parse({
    id: legacy.id.toLowerCase(),
    phase: legacy.phase,
    startedAt: legacy.started_at,
    updatedAt: legacy.updated_at,
    state: controlState(legacy.state as JsonValue, controlStateKeys),
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
