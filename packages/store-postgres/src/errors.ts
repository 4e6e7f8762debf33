import { CorruptionError, SessionfoldError, StorageError } from '@sessionfold/core/kernel';

/** The SQLSTATE of a node-postgres `DatabaseError` (e.g. `57P01`), or undefined for any other value. */
export function sqlState(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Translates a driver error into the port's typed errors, keeping it as `cause`, so no `pg` error reaches a
 * caller: damage the server reports is `CorruptionError` naming the schema, anything else (a lost connection,
 * a timeout, a refused login) is a `StorageError` that says whether the write may have happened. Errors of
 * our own pass unchanged.
 */
export function translateError(error: unknown, schema: string): Error {
  if (error instanceof SessionfoldError) return error;
  const state = sqlState(error);
  const detail = error instanceof Error ? error.message : String(error);
  const prefix = `@sessionfold/store-postgres: schema ${schema}`;
  if (state === 'XX001' || state === 'XX002') {
    return new CorruptionError(schema, undefined, `the server reports damaged data (${state}: ${detail}); nothing was written`, { cause: error });
  }
  if (state === undefined) {
    // No SQLSTATE: the connection failed (refused, reset, terminated). A write whose COMMIT was sent may have
    // happened; an idempotent retry (event ids) makes that safe to find out.
    return new StorageError(`${prefix}: the connection to the server failed (${detail}); an append in flight may or may not have committed`, {
      cause: error,
    });
  }
  if (state.startsWith('57P') || state.startsWith('08')) {
    return new StorageError(`${prefix}: the server ended the connection (${state}: ${detail}); the transaction was rolled back`, { cause: error });
  }
  if (state === '25P03') {
    return new StorageError(`${prefix}: a transaction stayed idle past idle_in_transaction_session_timeout (${detail})`, { cause: error });
  }
  if (state === '57014') {
    return new StorageError(`${prefix}: the statement was cancelled or timed out (${detail}); nothing was written`, { cause: error });
  }
  return new StorageError(`${prefix}: ${detail} (SQLSTATE ${state})`, { cause: error });
}

/** SQLSTATE classes and codes of failures that pass by themselves: connection exceptions, the server shutting down or starting, too little of a resource, a cancelled statement, a serialization failure or deadlock. */
const PASSING_STATES = /^(08...|57P..|53...|57014|40001|40P01)$/;

/**
 * Whether `error` (as `translateError` made it) is a failure that may pass when the same read is tried again: a
 * lost or refused connection, a server restarting or starting up, a resource short for now. Damage, a closed
 * store, and errors of the store's own code are not.
 */
export function transientFailure(error: unknown): error is StorageError {
  if (!(error instanceof StorageError) || error.poisoned) return false;
  const cause: unknown = error.cause;
  const state = sqlState(cause);
  if (state !== undefined) return PASSING_STATES.test(state);
  // No SQLSTATE: the driver's own connection failures (refused, reset, terminated, timed out) are plain `Error`s
  // or carry an errno code; a `TypeError` and its kind are a fault of the code, which no retry mends.
  return (
    cause instanceof Error && !(cause instanceof TypeError || cause instanceof RangeError || cause instanceof ReferenceError || cause instanceof SyntaxError)
  );
}
