/**
 * The session domain for tools that read its streams: the reducers that fold a session's, the catalog's and a start
 * key's stream, stream naming and derived ids, the materialised record, the input schemas the service parses with
 * and the record schemas. zod is a peer of this subpath: its schemas are zod 4 schemas. The service itself and its
 * plain types are exported from the package root.
 *
 * @module
 */

export {
  CATALOG_STREAM,
  RECEIPT_ID_NAMESPACE,
  SESSION_STREAM_PREFIX,
  START_KEY_STREAM_PREFIX,
  commandIdFor,
  isUuid,
  sessionIdForStart,
  sessionStream,
  startKeyStream,
  uuidV5,
} from './ids.js';
export type { StartKeyEvent } from './events.js';
export { catalogReducer, sessionReducer, sessionSummaryReducer, startKeyReducer } from './reducer.js';
export {
  PHASES,
  catalogStateSchema,
  completionReceiptSchema,
  ingressFailureEntrySchema,
  lifecycleRecordSchema,
  phaseSchema,
  sessionCommandSchema,
  sessionStreamStateSchema,
  startKeyStateSchema,
  type CatalogState,
  type SessionStreamState,
  type StartKeyState,
} from './model.js';
export { inputSchemas } from './inputs.js';
export { controlState } from './control-state.js';
export { decideReleaseStartKey, isOpenCommand } from './decisions.js';
export { materialise } from './view.js';
