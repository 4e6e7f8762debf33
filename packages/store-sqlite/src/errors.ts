import { CorruptionError, SessionfoldError, StorageError } from '@sessionfold/core/kernel';

/** The `code` of a better-sqlite3 `SqliteError` (e.g. `SQLITE_BUSY`), or undefined for any other value. */
export function sqliteCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/**
 * Translates a driver error into the port's typed errors, keeping it as `cause`, so no `SqliteError` reaches
 * a caller: damage is `CorruptionError` naming the file, a lock held past the timeout is a `StorageError`
 * that says so, an I/O error is a poisoned `StorageError`, and anything else from SQLite is a
 * `StorageError`. Errors of our own pass unchanged.
 */
export function translateError(error: unknown, path: string, busyTimeoutMs: number): Error {
  if (error instanceof SessionfoldError) return error;
  const code = sqliteCode(error);
  const detail = error instanceof Error ? error.message : String(error);
  if (code === undefined) return new StorageError(`@sessionfold/store-sqlite: ${path}: ${detail}`, { cause: error });
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') {
    return new CorruptionError(path, undefined, `damaged, or not a SQLite database (${code}: ${detail}); nothing was written`, { cause: error });
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new StorageError(
      `@sessionfold/store-sqlite: ${path} stayed locked by another connection for more than ${busyTimeoutMs} ms (${code}); ` +
        'nothing was written, try again or raise busyTimeoutMs',
      { cause: error },
    );
  }
  if (code.startsWith('SQLITE_IOERR')) {
    // After a failed write or sync, what the OS kept of the file is unknown: no further write is trusted.
    return new StorageError(
      `@sessionfold/store-sqlite: ${path}: the disk failed a read or write (${code}: ${detail}); the store refuses writes until it is reopened`,
      { cause: error, poisoned: true },
    );
  }
  if (code === 'SQLITE_FULL') {
    return new StorageError(`@sessionfold/store-sqlite: ${path}: the disk or database is full (${code}); nothing was written`, { cause: error });
  }
  return new StorageError(`@sessionfold/store-sqlite: ${path}: ${detail} (${code})`, { cause: error });
}

/** Runs `work`, translating whatever it throws with `translate`. */
export function guarded<T>(translate: (error: unknown) => Error, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw translate(error);
  }
}

/**
 * Whether `error` (as `translateError` made it) may pass when the same read is tried again: the database locked
 * by another connection past the busy timeout. Damage, a disk error (which poisons) and a closed store are not.
 */
export function transientFailure(error: unknown): error is StorageError {
  if (!(error instanceof StorageError) || error.poisoned) return false;
  const code = sqliteCode(error.cause);
  return code !== undefined && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}
