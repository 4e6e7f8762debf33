import type { StoreUnderTest } from '@sessionfold/conformance';
import { memoryStore, type EventStore } from '@sessionfold/core';
import { loadPeer } from './peers.js';
import type { RawFamilyName } from './raw-limits.js';

/**
 * Abilities a scenario may need; a store that lacks one gets "n/a" with the reason, never a crash.
 * `concurrentAppends`: appends in flight on one store instance, to different streams;
 * `concurrentAppendsToOneStream`: appends in flight to the same stream, each expecting `'any'`;
 * `segmentCleaning`: a log in segment files whose dead lines the store itself rewrites away in the background;
 * `heapIndex`: an index of every stream that an open loads onto the JavaScript heap.
 */
export type Capability =
  | 'concurrentAppends'
  | 'concurrentAppendsToOneStream'
  | 'compact'
  | 'readAll'
  | 'reopen'
  | 'service'
  | 'storeUrl'
  | 'segmentCleaning'
  | 'heapIndex';

/**
 * A store under test (`StoreUnderTest`: `open(dir)` opens, or when durable reopens, the store kept in `dir`),
 * loaded and ready to open, with what the benchmark's table needs besides.
 */
export interface StoreSubject extends StoreUnderTest {
  /** Which raw limits its figures are compared with. */
  readonly raw: RawFamilyName;
  /** Capabilities it lacks, each with the reason shown in the table. */
  readonly lacks: Partial<Record<Capability, string>>;
  /** The `sessionfold --store` URL of the store kept in `dir` (stores with the `storeUrl` capability). */
  url?(dir: string): string;
  /** Opens the store kept in `dir` read-only, as the CLI's reading commands do (durable stores; beside an open writer too). */
  openReadOnly?(dir: string): Promise<EventStore>;
  /** Something the table should say about the last scenario (e.g. retries), cleared by reading it. */
  takeNote?(): string | undefined;
}

/** One entry of the store list: loads the store, or says why it cannot (e.g. its package is not built yet). */
export interface SubjectEntry {
  readonly name: string;
  load(): Promise<StoreSubject | { unavailable: string }>;
}

/** The slice of a store package the bench uses: its one async factory, taking options. */
type Factory = (options: Record<string, unknown>) => Promise<EventStore>;

/** Finds `exportName` in `specifier`, or explains why it is not there (not built yet, or failing to load). */
async function factory(specifier: string, exportName: string): Promise<Factory | { unavailable: string }> {
  try {
    const module = (await import(specifier)) as Record<string, unknown>;
    const found = module[exportName];
    return typeof found === 'function' ? (found as Factory) : { unavailable: 'n/a (not built)' };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') return { unavailable: 'n/a (not built)' };
    return { unavailable: `n/a (fails to load: ${error instanceof Error ? error.message.split('\n')[0] : String(error)})` };
  }
}

/** What the Emmett SQLite peer's adapter module exports. */
interface EmmettPeer {
  emmettSqliteStore(dir: string, counters: { busyRetries: number }): EventStore;
}

/** What the Emmett PostgreSQL peer's adapter module exports. */
interface EmmettPostgresPeer {
  emmettPostgresStore(connectionString: string, database: string): Promise<EventStore>;
}

/** Whether loading a peer that is not installed installs it (the benchmark's own run) or skips its rows (tests). */
let peersInstallOnLoad = false;

/** Makes loading a peer install it first when it is missing: the benchmark's command line turns this on. */
export function installPeersOnLoad(on: boolean): void {
  peersInstallOnLoad = on;
}

/** Every store the bench knows, in table order. Add a store here and every scenario runs it. */
export const SUBJECTS: readonly SubjectEntry[] = [
  {
    name: 'memory',
    async load() {
      return {
        name: 'memory',
        durable: false,
        raw: 'memory',
        lacks: {
          reopen: 'nothing survives the process',
          storeUrl: 'nothing on disk for the command line to open',
          segmentCleaning: 'no log on disk to clean',
          heapIndex: 'nothing survives the process to reopen',
        },
        open: async () => memoryStore(),
      };
    },
  },
  {
    name: 'file',
    async load() {
      const make = await factory('@sessionfold/store-file', 'fileStore');
      if ('unavailable' in make) return make;
      return {
        name: 'file',
        durable: true,
        raw: 'file',
        lacks: {},
        open: async (directory) => make({ directory }),
        openReadOnly: async (directory) => make({ directory, readOnly: true }),
        url: (directory) => `file:${directory}`,
      };
    },
  },
  {
    name: 'sqlite',
    async load() {
      const make = await factory('@sessionfold/store-sqlite', 'sqliteStore');
      if ('unavailable' in make) return make;
      const { join } = await import('node:path');
      return {
        name: 'sqlite',
        durable: true,
        raw: 'sqlite',
        lacks: {
          segmentCleaning: 'no log segments: SQLite reuses the pages of deleted rows',
          heapIndex: 'its index is in the database file, not on the heap',
        },
        open: async (dir) => await make({ path: join(dir, 'store.sqlite') }),
        openReadOnly: async (dir) => await make({ path: join(dir, 'store.sqlite'), readOnly: true }),
        url: (dir) => `sqlite:${join(dir, 'store.sqlite')}`,
      };
    },
  },
  {
    name: 'postgres',
    async load() {
      const { PG_URL, benchSchema } = await import('./raw/postgres.js');
      if (PG_URL === undefined) return { unavailable: 'n/a (set SESSIONFOLD_PG_URL)' };
      const make = await factory('@sessionfold/store-postgres', 'postgresStore');
      if ('unavailable' in make) return make;
      return {
        name: 'postgres',
        durable: true,
        raw: 'postgres',
        lacks: {
          segmentCleaning: 'no log segments: the server vacuums its tables',
          heapIndex: 'its index is on the server, not on the heap',
        },
        open: async (dir) => make({ connectionString: PG_URL, schema: benchSchema(dir) }),
        openReadOnly: async (dir) => make({ connectionString: PG_URL, schema: benchSchema(dir), readOnly: true }),
        url: (dir) => `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${benchSchema(dir)}`,
      };
    },
  },
  {
    name: 'emmett-sqlite',
    async load() {
      const peer = await loadPeer<EmmettPeer>('emmett-sqlite', 'store.ts', peersInstallOnLoad);
      if ('unavailable' in peer) return peer;
      const counters = { busyRetries: 0 };
      return {
        name: 'emmett-sqlite',
        durable: true,
        raw: 'sqlite',
        lacks: {
          concurrentAppends: 'concurrent appends on one store fail (SQLITE_MISUSE: Database is closed)',
          compact: 'no compaction',
          service: 'not a sessionfold store',
          storeUrl: 'not a sessionfold store',
          segmentCleaning: 'no log segments: SQLite reuses the pages of deleted rows',
          heapIndex: 'its index is in the database file, not on the heap',
        },
        open: async (dir) => peer.emmettSqliteStore(dir, counters),
        takeNote() {
          const retries = counters.busyRetries;
          counters.busyRetries = 0;
          return retries === 0 ? undefined : `${retries} append(s) retried after SQLITE_BUSY`;
        },
      };
    },
  },
  {
    name: 'emmett-postgresql',
    async load() {
      const { PG_URL, benchDatabase } = await import('./raw/postgres.js');
      if (PG_URL === undefined) return { unavailable: 'n/a (set SESSIONFOLD_PG_URL)' };
      const peer = await loadPeer<EmmettPostgresPeer>('emmett-postgresql', 'store.ts', peersInstallOnLoad);
      if ('unavailable' in peer) return peer;
      return {
        name: 'emmett-postgresql',
        durable: true,
        raw: 'postgres',
        lacks: {
          concurrentAppendsToOneStream: "concurrent appends to one stream fail even expecting 'any' (ExpectedVersionConflictError)",
          compact: 'no compaction',
          service: 'not a sessionfold store',
          storeUrl: 'not a sessionfold store',
          segmentCleaning: 'no log segments: the server vacuums its tables',
          heapIndex: 'its index is on the server, not on the heap',
        },
        // Emmett keeps one store per database (it looks its functions up database-wide, whatever the schema), so each
        // directory maps to a database of its own, dropped with the bench's schemas at the end: every store starts empty.
        open: (dir) => peer.emmettPostgresStore(PG_URL, benchDatabase(dir, 'emmett')),
      };
    },
  },
];

/** Loads the entries of `list` named in `only` (all when empty), in list order. */
export async function loadSubjects(
  only: readonly string[] = [],
  list: readonly SubjectEntry[] = SUBJECTS,
): Promise<Array<{ name: string; subject?: StoreSubject; unavailable?: string }>> {
  const wanted = list.filter((entry) => only.length === 0 || only.includes(entry.name));
  return Promise.all(
    wanted.map(async (entry) => {
      const loaded = await entry.load();
      return 'unavailable' in loaded ? { name: entry.name, unavailable: loaded.unavailable } : { name: entry.name, subject: loaded };
    }),
  );
}
