/**
 * The session file: its schemas, identity check, and atomic save and load. It writes with
 * `@sessionfold/atomic-write`, whose names that package exports.
 *
 * @mergeModuleWith <project>
 * @module
 */
export { SCHEMA_VERSION, READABLE_VERSIONS, validatePayload } from './envelope.js';
export type { SessionSnapshot, SessionPayload, SchemaVersion } from './envelope.js';
export { newSnapshot, saveSnapshot, loadSnapshot, type SaveSnapshotOptions } from './snapshot-file.js';
export { identityFor, checkIdentity, IDENTITY_FIELDS } from './identity.js';
export {
  sessionIdentitySchema,
  turnSchema,
  toolCallSchema,
  toolResultSchema,
  usageSchema,
  transcriptEntrySchema,
  loopSchema,
  loopV1Schema,
  counterSchema,
  TRANSCRIPT_ENTRY_TYPES,
  CONTINUATION_FIELDS,
} from './records.js';
export type { SessionIdentity, Turn, ToolCall, ToolResult, Usage, TranscriptEntry, LoopState } from './records.js';
export { jsonValueSchema, jsonObjectSchema, type JsonValue, type JsonObject } from './json-value.js';
export { pythonJsonDumps } from './python-json.js';
export * from './errors.js';
