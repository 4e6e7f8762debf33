import { cloneJson, type JsonObject, type JsonValue } from '../kernel/json.js';
import { isJsonObject } from './json-schema.js';

/**
 * The keys of a session's state that are authoritative for its lifecycle and recovery. Everything else
 * (presentation, transcripts, caches) is rebuilt from the session log and never kept in the control state.
 */
export const DEFAULT_CONTROL_STATE_KEYS: readonly string[] = Object.freeze([
  'format',
  'version',
  'stateVersion',
  'sessionId',
  'sessionType',
  'sourceSessionType',
  'channel',
  'freeTime',
  'selfTimeIntent',
  'orchestration',
  'provenanceId',
  'libSessionId',
  'rootNodeIds',
  'referenceRootNodeIds',
  'startedAt',
  'pendingTurn',
  'pendingExternalEventId',
  'roundsUsed',
  'completed',
  'sessionObjectId',
  'commitReceipt',
  'commitAuthor',
  'archivePlan',
  'startIdempotencyId',
  'historyIngress',
]);

/**
 * Keeps only the whitelisted keys of `value` (an empty object for a non-object), projecting
 * `historyIngress` the same way and dropping a null `commitReceipt`.
 */
export function controlState(value: JsonValue | undefined, keys: readonly string[] = DEFAULT_CONTROL_STATE_KEYS): JsonObject {
  const output: JsonObject = {};
  if (!isJsonObject(value)) return output;
  for (const key of keys) {
    if (key === '__proto__' || !Object.hasOwn(value, key)) continue;
    const item = value[key] as JsonValue;
    if (key === 'commitReceipt' && item === null) continue;
    output[key] = key === 'historyIngress' ? controlState(item, keys) : cloneJson(item);
  }
  return output;
}
