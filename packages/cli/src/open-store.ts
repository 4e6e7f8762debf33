import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CompleteEventStore } from '@sessionfold/core/kernel';
import { CliError, ExitCode, notFound } from './exit-codes.js';
import { describeLocation, type StoreLocation } from './store-url.js';

/** One problem a store's own `verify()` found. */
export interface VerifyProblem {
  severity: 'error' | 'warning';
  /** File, table or other container of the damaged record. */
  file: string;
  /** 1-based line (or record number), when known. */
  line?: number | undefined;
  message: string;
}

/** An opened store and what the CLI needs to know about it. */
export interface OpenedStore {
  /** Every store the CLI opens is one this project ships: it has every optional member of the port. */
  store: CompleteEventStore;
  location: StoreLocation;
  /** Printable location. */
  where: string;
  readOnly: boolean;
}

/**
 * How a command uses its store: `read` only looks (never creates, migrates or repairs anything); `write` changes
 * a store that must already exist (compact, delete); `create` may make a new one (import, copy's destination).
 */
export type StoreAccess = 'read' | 'write' | 'create';

/**
 * Opens the store at `location`. Unless `create` is asked for, a store that does not exist is "not found"
 * (exit 3) and nothing is created for it; a `read` opening also never migrates or repairs anything.
 */
export async function openStore(location: StoreLocation, access: StoreAccess): Promise<OpenedStore> {
  const where = describeLocation(location);
  const readOnly = access === 'read';
  const opened = (store: CompleteEventStore): OpenedStore => ({ store, location, where, readOnly });
  switch (location.kind) {
    case 'file': {
      // A reader takes an existing directory as a store (empty until a writer opens it: `tail --follow` waits for
      // one); a command that changes a store needs one a writer has made.
      if (access !== 'create') assertDirectory(location.directory, where);
      if (access === 'write' && !holdsFileStore(location.directory)) {
        throw notFound(`no store at ${where}: the directory holds no file store`, 'Try: check the path; sessionfold import or copy make a new store');
      }
      const { fileStore } = await import('@sessionfold/store-file');
      return opened(await fileStore({ directory: location.directory, readOnly }));
    }
    case 'sqlite': {
      if (access !== 'create') assertSqliteFile(location.path, where);
      // Loaded per kind: a command on one kind of store does not load the others (better-sqlite3 is a native module).
      const { sqliteStore } = await import('@sessionfold/store-sqlite');
      return opened(await sqliteStore({ path: location.path, readOnly }));
    }
    case 'postgres': {
      const factory = await postgresFactory();
      const open = (asReader: boolean) => openPostgres(factory, location, asReader, where);
      if (access === 'write') {
        // A reader's open checks that the schema exists and changes nothing; a writer's would create it.
        const probe = await open(true).catch((error: unknown) => {
          if (error instanceof CliError && error.exitCode === ExitCode.notFound) throw error;
          // A schema of another version, say: the writer's open migrates it or names the problem itself.
          return undefined;
        });
        await probe?.close();
      }
      return opened(await open(readOnly));
    }
  }
}

/** Throws "not found" unless `directory` is a directory. */
function assertDirectory(directory: string, where: string): void {
  if (!existsSync(directory))
    throw notFound(`no store at ${where}: the directory does not exist`, 'Try: check the path, or --store sqlite:FILE for a SQLite store');
  if (!statSync(directory).isDirectory()) throw notFound(`${where} is not a directory`, `Try: --store sqlite:${directory} if it is a SQLite file`);
}

/**
 * Whether `directory` holds a file store of any format: its format file, the log of format 4, or the streams
 * directory of formats 1–3 (format 1 has no format file).
 */
export function holdsFileStore(directory: string): boolean {
  return ['format.json', 'log', 'streams'].some((entry) => existsSync(join(directory, entry)));
}

function assertSqliteFile(path: string, where: string): void {
  if (!existsSync(path)) throw notFound(`no store at ${where}: the file does not exist`, 'Try: check the path');
  if (statSync(path).isDirectory()) throw notFound(`${where} is a directory, not a SQLite file`, `Try: --store file:${path} if it is a file store`);
}

/** The PostgreSQL store's factory, as the CLI calls it; the package is loaded only when a postgres URL is used. */
type PostgresFactory = (options: { connectionString: string; schema?: string; readOnly?: boolean }) => Promise<CompleteEventStore>;

async function postgresFactory(): Promise<PostgresFactory> {
  // A variable specifier: the package is optional, and the CLI must build and run without it.
  const specifier = '@sessionfold/store-postgres';
  try {
    const module = (await import(specifier)) as { postgresStore?: PostgresFactory };
    if (typeof module.postgresStore !== 'function') throw new Error(`${specifier} exports no postgresStore`);
    return module.postgresStore;
  } catch (cause) {
    throw new CliError(
      ExitCode.storage,
      `the PostgreSQL store is not available: ${specifier} could not be loaded (${cause instanceof Error ? cause.message.split('\n')[0] : String(cause)})`,
      {
        hint: `Try: npm install ${specifier}, or use a file: or sqlite: store`,
        cause,
      },
    );
  }
}

/**
 * Opens the PostgreSQL store. A schema or database that does not exist is "not found", and a server that cannot
 * be reached says so, each with a hint about the URL rather than about files.
 */
async function openPostgres(
  factory: PostgresFactory,
  location: Extract<StoreLocation, { kind: 'postgres' }>,
  readOnly: boolean,
  where: string,
): Promise<CompleteEventStore> {
  try {
    return await factory({ connectionString: location.connectionString, ...(location.schema === undefined ? {} : { schema: location.schema }), readOnly });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const code = pgCode(error);
    // Version 0: a schema that exists but holds none of the store's tables, as yet.
    if (code === '3D000' || /schema \S+ (does not exist|has version 0,)/.test(message)) {
      // The store's words up to its advice on read-only opening, which a command line cannot act on.
      const what = message.replace(/^@sessionfold\/store-postgres: /, '').replace(/; a read-only store never migrates.*$/, '');
      throw new CliError(ExitCode.notFound, `no store at ${where}: ${what}`, { hint: 'Try: check the database and ?schema= in the URL', cause: error });
    }
    // Nothing was appended while opening: the store's words for a connection lost mid-append do not apply here.
    const said = message.replace(/; an append in flight may or may not have committed$/, '');
    if (code !== undefined && (CONNECT_FAILURES.has(code) || /^(08|57P)/.test(code))) {
      throw new CliError(ExitCode.storage, `cannot connect to ${where}: ${said}`, {
        hint: 'Try: check that PostgreSQL runs at the URL’s host and port, and the user and password',
        cause: error,
      });
    }
    if (said !== message) throw new CliError(ExitCode.storage, `cannot open ${where}: ${said}`, { hint: POSTGRES_HINT, cause: error });
    throw error;
  }
}

/** System and server codes that mean the server could not be reached or would not let the user in. */
const CONNECT_FAILURES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  '28P01',
  '28000',
]);

const POSTGRES_HINT = 'Try: check that PostgreSQL runs and accepts connections at the URL’s host and port, then run the command again';

/** The error code of a driver or system error, looked for along its causes. */
function pgCode(error: unknown): string | undefined {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++) {
    const code = codeOf(at);
    if (code !== undefined) return code;
    // A connection tried on several addresses fails with all of them.
    if (at instanceof AggregateError) for (const inner of at.errors) if (codeOf(inner) !== undefined) return codeOf(inner);
  }
  return undefined;
}

/** A driver's or the system's code (`3D000`, `ECONNREFUSED`); not this project's own (`storage_error`). */
function codeOf(error: unknown): string | undefined {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && code !== '' && !/^[a-z_]+$/.test(code) ? code : undefined;
}
