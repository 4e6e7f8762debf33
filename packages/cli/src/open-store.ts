import { existsSync, statSync } from 'node:fs';
import type { EventStore } from '@sessionfold/core/kernel';
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

// Abilities a store may have beyond the port are optional members of the port; the CLI falls back to the port
// when one is missing (`verify` reads everything, `tail --follow` polls, `info` shows the lock holder or nothing).
/** A store with the optional abilities it may have (`verify`, `follow`, `status` are optional port members). */
export type CliStore = EventStore;

/** An opened store and what the CLI needs to know about it. */
export interface OpenedStore {
  store: CliStore;
  location: StoreLocation;
  /** Printable location. */
  where: string;
  readOnly: boolean;
}

/**
 * Opens the store at `location`. Read-only opening never creates, migrates or repairs anything: a path that
 * does not exist is "not found" (exit 3) and nothing is created for it.
 */
export async function openStore(location: StoreLocation, options: { readOnly: boolean }): Promise<OpenedStore> {
  const where = describeLocation(location);
  const opened = (store: EventStore): OpenedStore => ({ store: store as CliStore, location, where, readOnly: options.readOnly });
  switch (location.kind) {
    case 'file': {
      if (options.readOnly) {
        if (!existsSync(location.directory))
          throw notFound(`no store at ${where}: the directory does not exist`, 'Try: check the path, or --store sqlite:FILE for a SQLite store');
        if (!statSync(location.directory).isDirectory())
          throw notFound(`${where} is not a directory`, `Try: --store sqlite:${location.directory} if it is a SQLite file`);
      }
      const { fileStore } = await import('@sessionfold/store-file');
      return opened(await fileStore({ directory: location.directory, readOnly: options.readOnly }));
    }
    case 'sqlite': {
      if (options.readOnly && !existsSync(location.path)) throw notFound(`no store at ${where}: the file does not exist`, 'Try: check the path');
      // Loaded per kind: a command on one kind of store does not load the others (better-sqlite3 is a native module).
      const { sqliteStore } = await import('@sessionfold/store-sqlite');
      return opened(await sqliteStore({ path: location.path, readOnly: options.readOnly }));
    }
    case 'postgres':
      return opened(await openPostgres(location, options.readOnly));
  }
}

/** The PostgreSQL store's factory, as the CLI calls it; the package is loaded only when a postgres URL is used. */
type PostgresFactory = (options: { connectionString: string; schema?: string; readOnly?: boolean }) => Promise<EventStore>;

async function openPostgres(location: Extract<StoreLocation, { kind: 'postgres' }>, readOnly: boolean): Promise<EventStore> {
  // A variable specifier: the package is optional, and the CLI must build and run without it.
  const specifier = '@sessionfold/store-postgres';
  let factory: PostgresFactory;
  try {
    const module = (await import(specifier)) as { postgresStore?: PostgresFactory };
    if (typeof module.postgresStore !== 'function') throw new Error(`${specifier} exports no postgresStore`);
    factory = module.postgresStore;
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
  return factory({ connectionString: location.connectionString, ...(location.schema === undefined ? {} : { schema: location.schema }), readOnly });
}
