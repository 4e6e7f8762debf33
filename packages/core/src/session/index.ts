// `@sessionfold/core/session`: the session domain for tools and extenders — the reducers, the events and their
// zod schemas, the materialised view, stream naming and the policies' constants. zod is a peer of this subpath:
// its schemas are zod 4 schemas. The service itself and its plain types are exported from the package root.

export {
  CATALOG_STREAM,
  RECEIPT_ID_NAMESPACE,
  SESSION_STREAM_PREFIX,
  START_KEY_STREAM_PREFIX,
  commandIdFor,
  isUuid,
  legacySessionIdForStart,
  sessionIdForStart,
  sessionIdOfStream,
  sessionStream,
  startKeyStream,
  uuidV5,
} from './ids.js';
export {
  catalogEventSchemas,
  parseCatalogEvent,
  parseSessionEvent,
  parseStartKeyEvent,
  sessionEvent,
  sessionEventSchemas,
  startKeyEventSchemas,
  type CatalogEvent,
  type SessionEvent,
  type SessionEventData,
  type SessionEventType,
  type StartKeyEvent,
} from './events.js';
export {
  CATALOG_STATE_SCHEMA_VERSION,
  SESSION_STATE_SCHEMA_VERSION,
  START_KEY_STATE_SCHEMA_VERSION,
  applyCatalogEvent,
  applySessionEvent,
  applyStartKeyEvent,
  catalogReducer,
  initialCatalogState,
  initialSessionState,
  initialStartKeyState,
  logEntries,
  sessionReducer,
  sessionSummaryReducer,
  startKeyReducer,
} from './reducer.js';
export {
  FIRST_USER_MESSAGE_LIMIT,
  INGRESS_FAILURE_LIMIT,
  INGRESS_RETRY_DELAY_SECONDS,
  LOG_ROLES,
  PHASES,
  RETAINED_INGRESS_FAILURES,
  TRANSCRIPT_ROLES,
  catalogStateSchema,
  completionReceiptSchema,
  ingressFailureEntrySchema,
  lifecycleRecordSchema,
  phaseSchema,
  sessionCommandSchema,
  sessionStreamStateSchema,
  startKeyBindingSchema,
  startKeyStateSchema,
  type CatalogState,
  type SessionStreamState,
  type StartKeyBinding,
  type StartKeyState,
} from './model.js';
export { inputSchemas } from './inputs.js';
export { DEFAULT_CONTROL_STATE_KEYS, controlState } from './control-state.js';
export { decideReleaseStartKey, isOpenCommand } from './decisions.js';
export { materialise, receiptRecord, summaryRecord, transcriptEntry, transcriptText } from './view.js';
