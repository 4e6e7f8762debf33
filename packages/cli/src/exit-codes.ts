import {
  ConcurrencyError,
  CorruptionError,
  InvalidInputError,
  SessionfoldError,
  StorageError,
  StoreClosedError,
  StoreLockedError,
  UnsupportedFormatError,
} from '@sessionfold/core/kernel';

/**
 * The session service's error codes (`SessionHistoryError`), told apart by code rather than by class so that
 * commands which never use the service do not load the session domain to classify an error.
 */
const SESSION_CODES: ReadonlySet<string> = new Set(['invalid_request', 'not_found', 'state_conflict', 'internal_error']);

/** A store's words for a full disk: the file store's, SQLite's (SQLITE_FULL) and PostgreSQL's (SQLSTATE 53100). */
const FULL_DISK = /disk is full|disk or database is full|\bENOSPC\b|SQLITE_FULL|SQLSTATE 53100|disk quota/i;

/** The exit codes of every command; `--help` and the README list them. */
export const ExitCode = {
  ok: 0,
  /** Problems found (verify) or the command refused to act (e.g. a diverged destination). */
  problems: 1,
  /** The command line was wrong: unknown option, bad value, missing argument or store. */
  usage: 2,
  /** The store, session, stream or file named does not exist. */
  notFound: 3,
  /** The store failed or is damaged; the message is the store's, followed by a hint. */
  storage: 4,
  /** Stopped by Ctrl-C (SIGINT) or SIGTERM between two streams: what was written before is whole (128 + SIGINT). */
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The exit-code table shown at the end of `--help`. */
export const EXIT_CODES_HELP = `Exit codes:
  0  ok
  1  problems found (verify) or refused (e.g. a diverged destination, an import without --yes)
  2  usage error (unknown option, bad value, missing store)
  3  not found (store, session, stream, file)
  4  storage error: the store's message and a "Try: …" hint
  130  interrupted: Ctrl-C stopped copy, import, export or compact --all between two streams`;

/** An error the CLI reports itself: its message, exit code and an optional hint line. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  readonly hint: string | undefined;
  constructor(exitCode: ExitCode, message: string, options?: { hint?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.exitCode = exitCode;
    this.hint = options?.hint;
  }
}

/** A usage error: exit 2. */
export const usageError = (message: string, hint?: string) => new CliError(ExitCode.usage, message, hint === undefined ? undefined : { hint });
/** Something named does not exist: exit 3. */
export const notFound = (message: string, hint?: string) => new CliError(ExitCode.notFound, message, hint === undefined ? undefined : { hint });
/** The command refuses to act: exit 1. */
export const refused = (message: string, hint?: string) => new CliError(ExitCode.problems, message, hint === undefined ? undefined : { hint });

/** The kind of store an error came from (`file`, `sqlite`, `postgres`), noted where the store was used. */
const storeKinds = new WeakMap<object, string>();

/**
 * Notes that `error` came from a store of `kind`, so its hint is about that kind of store (a server's address, not
 * a path); the first note stands, as it was made nearest to where the error arose.
 */
export function noteStoreKind(error: unknown, kind: string): void {
  if (typeof error === 'object' && error !== null && !storeKinds.has(error)) storeKinds.set(error, kind);
}

/** What a failed command reports: the exit code, the message and a hint. */
export interface Failure {
  exitCode: ExitCode;
  code: string;
  message: string;
  hint: string | undefined;
}

/**
 * Classifies anything a command threw. Typed store errors keep their message (the store's own words) and get
 * a hint saying what to try; anything unknown is a storage error, since it came from below the CLI.
 */
export function describeFailure(error: unknown): Failure {
  if (error instanceof CliError) return { exitCode: error.exitCode, code: codeOfExit(error.exitCode), message: error.message, hint: error.hint };
  if (error instanceof SessionfoldError && SESSION_CODES.has(error.code)) {
    const exitCode =
      error.code === 'not_found'
        ? ExitCode.notFound
        : error.code === 'invalid_request'
          ? ExitCode.usage
          : error.code === 'state_conflict'
            ? ExitCode.problems
            : ExitCode.storage;
    const cause = error.code === 'internal_error' && error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return { exitCode, code: error.code, message: error.message + cause, hint: exitCode === ExitCode.storage ? 'Try: sessionfold verify' : undefined };
  }
  if (error instanceof InvalidInputError) return { exitCode: ExitCode.usage, code: error.code, message: error.message, hint: undefined };
  if (error instanceof SessionfoldError) return { exitCode: ExitCode.storage, code: error.code, message: error.message, hint: hintFor(error) };
  const message = error instanceof Error ? error.message : String(error);
  return { exitCode: ExitCode.storage, code: 'storage_error', message, hint: 'Try: sessionfold info, or check the path and its permissions' };
}

function hintFor(error: SessionfoldError): string {
  if (error instanceof StorageError && FULL_DISK.test(error.message)) return 'Try: free disk space where the store lives, then run the command again';
  if (error instanceof StoreLockedError) return 'Try: stop the other writer, or run a read-only command (info, list, show, tail, verify, export)';
  if (error instanceof CorruptionError) return 'Try: sessionfold verify, then restore the damaged file from a backup';
  if (error instanceof UnsupportedFormatError) return 'Try: a newer release of sessionfold';
  if (error instanceof ConcurrencyError) return 'Try: run the command again; another process wrote at the same time';
  if (error instanceof StoreClosedError) return 'Try: run the command again';
  if (error instanceof StorageError && /reopen it/.test(error.message))
    return 'Try: run the command again (the writer changed the store while it was being read)';
  if (error instanceof StorageError && /opened read-only/.test(error.message)) return 'Try: a command that only reads, or open the store for writing';
  if (storeKinds.get(error) === 'postgres')
    return 'Try: check that PostgreSQL runs at the URL’s host and port, and the user’s rights on the schema, then run the command again';
  return 'Try: check the store path, its permissions and free disk space, then sessionfold verify';
}

function codeOfExit(exitCode: ExitCode): string {
  switch (exitCode) {
    case ExitCode.usage:
      return 'usage';
    case ExitCode.notFound:
      return 'not_found';
    case ExitCode.storage:
      return 'storage_error';
    case ExitCode.interrupted:
      return 'interrupted';
    default:
      return 'refused';
  }
}
