import { SessionfoldError } from '@sessionfold/core/kernel';

/** Every error the atomic writer throws carries a stable string `code` and keeps the native error as `cause`. */
export abstract class AtomicWriteError extends SessionfoldError {}

/** The file-system step of the writer an I/O error happened in. */
export type IoOperation = 'create directory' | 'create temporary file' | 'write' | 'sync' | 'replace' | 'inspect';

/** A file-system call of the writer failed; `path` is the file or directory it was about. */
export class AtomicWriteIoError extends AtomicWriteError {
  readonly code = 'atomic_write_io' as const;
  readonly path: string;
  readonly operation: IoOperation;
  constructor(path: string, operation: IoOperation, options?: { cause?: unknown }) {
    super(`Could not ${operation} ${path}: ${describeCause(options?.cause)}`, options);
    this.path = path;
    this.operation = operation;
  }
}

/** The destination of an atomic write is a directory; nothing was written. */
export class DestinationIsDirectoryError extends AtomicWriteError {
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
export class AtomicWriteDirectorySyncError extends AtomicWriteError {
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

function describeCause(cause: unknown): string {
  if (cause instanceof Error) return cause.message;
  return String(cause);
}
