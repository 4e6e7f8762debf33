import { SessionfoldError } from '@sessionfold/core/kernel';

/** What to do about a session file that cannot be used, said the same way by every refusal. */
export const WAYS_OUT = 'Delete it to start fresh, or pass a different session file path.';

/**
 * Every error this package throws on purpose: a `SessionfoldError` (one `catch` covers the store and the
 * session file alike) with a stable string `code` per subclass.
 */
export abstract class SessionFileError extends SessionfoldError {}

/** The file-system step an I/O error happened in. */
export type IoOperation = 'read' | 'create directory' | 'create temporary file' | 'write' | 'sync' | 'replace' | 'inspect';

/** A file-system call failed; `path` is the file or directory it was about. */
export class SessionFileIoError extends SessionFileError {
  readonly code = 'session_file_io' as const;
  readonly path: string;
  readonly operation: IoOperation;
  constructor(path: string, operation: IoOperation, options?: { cause?: unknown }) {
    super(`Could not ${operation} ${path}: ${describeCause(options?.cause)}`, options);
    this.path = path;
    this.operation = operation;
  }
}

/** The destination of an atomic write is a directory; nothing was written. */
export class DestinationIsDirectoryError extends SessionFileError {
  readonly code = 'destination_is_directory' as const;
  readonly path: string;
  constructor(path: string, options?: { cause?: unknown }) {
    super(`Could not replace ${path}: it is a directory.`, options);
    this.path = path;
  }
}

/**
 * The new file was renamed into place but its directory could not be synced, so the replacement may
 * not survive a crash. Unlike every other write failure, the previous file is already gone.
 */
export class AtomicWriteDirectorySyncError extends SessionFileError {
  readonly code = 'atomic_write_directory_sync' as const;
  /** The file that was replaced (it now holds the new bytes). */
  readonly path: string;
  /** The directory whose sync failed. */
  readonly directory: string;
  constructor(path: string, directory: string, options?: { cause?: unknown }) {
    super(
      `Wrote ${path}, but could not sync its directory ${directory}: ${describeCause(options?.cause)}. ` +
        'The new file is in place; it may not survive a crash.',
      options,
    );
    this.path = path;
    this.directory = directory;
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
