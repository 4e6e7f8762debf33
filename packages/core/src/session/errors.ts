import { SessionfoldError } from '../kernel/errors.js';

/** The four kinds of failure the session-history service reports. */
export type SessionHistoryErrorCode = 'invalid_request' | 'not_found' | 'state_conflict' | 'internal_error';

/** The one message of every `internal_error`: storage details stay in `cause`, never in the text. */
export const INTERNAL_ERROR_MESSAGE = 'An unexpected Session History storage error occurred.';

/** Fixed texts callers may match on; the same words in every process and store. */
export const messages = {
  notFound: 'Session not found.',
  alreadyRegistered: 'Session is already registered.',
  noLongerActive: 'Session is no longer active.',
  objectsNeedActiveSession: 'Objects can only be supplied to an active session.',
  sessionComplete: 'Session is in phase complete; it no longer changes.',
  commandAlreadyComplete: 'Command is already complete.',
  commandNotClaimed: 'Command was not claimed.',
  commandClaimedByOther: 'Command is claimed by another worker.',
  ingressNotActive: 'Session History ingress is not in an active attempt.',
  ingressNotFailed: 'Session History ingress is not in the failed state.',
  noSessionObject:
    'completed session has no permanent session object: under the archive-and-delete completion policy, pass state.sessionObjectId (or state.historyIngress.sessionObjectId) naming the archive object',
  receiptNamesOtherObject: 'session commit receipt names a different archive object',
  receiptDiffers: 'completion receipt and requested session object differ',
  objectIdForm: 'Object ID must have the form pending:N.',
  invalidSessionId: 'invalid session ID',
  startedAt: 'startedAt must be an RFC 3339 timestamp',
  idempotencyId: 'idempotencyId must contain between 1 and 255 bytes',
  tooManyConflicts: 'Session changed concurrently too many times; try again.',
  closed: 'Session History is closed.',
  readOnly: 'Session History was opened read-only; open it without readOnly to change sessions.',
  notComplete: 'Session is not complete; only a completed session can be deleted.',
} as const;

/** Texts that name what they are about, as callers see them. */
export const namedMessages = {
  /** `stageObject` while a command is open (pending or processing). */
  objectsWhileCommand: (commandId: string, status: string): string => `Objects cannot be supplied while command ${commandId} is ${status}.`,
  /** A `state` key outside the control-state whitelist under the strict policy. */
  notControlState: (key: string): string =>
    `state.${key}: not a control-state key; put the application's own data in \`data\` (or open the service with controlState: 'project' to drop such keys silently)`,
};

/** Every error the session-history service throws: a stable `code` and a message safe to show a caller. */
export class SessionHistoryError extends SessionfoldError {
  readonly code: SessionHistoryErrorCode;
  /** The input field at fault, for `invalid_request` errors that concern one field. */
  readonly field: string | undefined;

  constructor(code: SessionHistoryErrorCode, message: string, options?: { cause?: unknown; field?: string }) {
    super(code === 'internal_error' ? INTERNAL_ERROR_MESSAGE : message, options);
    this.code = code;
    this.field = options?.field;
  }

  /** The input was refused; nothing was written. */
  static invalid(message: string, field?: string): SessionHistoryError {
    return new SessionHistoryError('invalid_request', message, field === undefined ? undefined : { field });
  }

  /** The session (or command, or object) does not exist. */
  static notFound(message: string = messages.notFound): SessionHistoryError {
    return new SessionHistoryError('not_found', message);
  }

  /** The session is not in a state that allows the change; nothing was written. */
  static conflict(message: string): SessionHistoryError {
    return new SessionHistoryError('state_conflict', message);
  }

  /** The caller expected another session version. */
  static versionConflict(expected: number, found: number): SessionHistoryError {
    return new SessionHistoryError('state_conflict', `Expected session version ${expected}, found ${found}.`);
  }

  /** Storage failed underneath; `cause` keeps the details. */
  static internal(cause: unknown): SessionHistoryError {
    return new SessionHistoryError('internal_error', INTERNAL_ERROR_MESSAGE, { cause });
  }
}
