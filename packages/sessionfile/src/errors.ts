import type { IoOperation } from '@sessionfold/atomic-write';
import { SessionfoldError } from '@sessionfold/core/kernel';

/** What to do about a session file that cannot be used, said the same way by every refusal. */
export const WAYS_OUT = 'Delete it to start fresh, or pass a different session file path.';

/**
 * Every error this package throws on purpose: a `SessionfoldError` (one `catch` covers the store and the
 * session file alike) with a stable string `code` per subclass.
 */
export abstract class SessionFileError extends SessionfoldError {}

/**
 * Reading or writing a session file failed in the file system; `path` is the file or directory it was about and
 * `operation` the step that failed (`read`, or a step of the atomic write). The native error is the `cause`.
 */
export class SessionFileIoError extends SessionFileError {
  readonly code = 'session_file_io' as const;
  readonly path: string;
  readonly operation: 'read' | IoOperation;
  constructor(path: string, operation: 'read' | IoOperation, options?: { cause?: unknown }) {
    super(`Could not ${operation} ${path}: ${describeCause(options?.cause)}`, options);
    this.path = path;
    this.operation = operation;
  }
}

/** A session file exists but is not a snapshot this package can read (or a snapshot it would refuse to write). */
export class SessionFileInvalidError extends SessionFileError {
  readonly code = 'session_file_invalid' as const;
  readonly path: string;
  /** What is wrong, without the file name or the ways out. */
  readonly reason: string;
  constructor(path: string, reason: string, options?: { cause?: unknown; waysOut?: boolean }) {
    super(`Session file ${path} ${reason}${options?.waysOut === false ? '' : ` ${WAYS_OUT}`}`, options);
    this.path = path;
    this.reason = reason;
  }
}

/** A saved snapshot belongs to a different session than the one being resumed. */
export class SessionIdentityMismatchError extends SessionFileError {
  readonly code = 'session_identity_mismatch' as const;
  /** The first identity field that differs, in the identity's field order. */
  readonly field: string;
  readonly saved: unknown;
  readonly current: unknown;
  constructor(field: string, saved: unknown, current: unknown) {
    super(
      `Session file belongs to a different session: ${field} is ${JSON.stringify(saved)} in the file ` +
        `but ${JSON.stringify(current)} for this run. ${WAYS_OUT}`,
    );
    this.field = field;
    this.saved = saved;
    this.current = current;
  }
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  return String(cause);
}
