import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryStore, type EventStore } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { postgresKind } from './postgres-subject.js';

/** Every store records this as `recordedAt`; the comparisons drop it anyway, but a fixed value keeps dumps stable. */
const STORE_TIME = '2026-07-23T00:00:00.000Z';
const storeClock = (): Date => new Date(STORE_TIME);

/**
 * One store under test, from its creation to its removal. `reopen` closes the store and opens it again on
 * the same data; a store whose data lives only in its instance (memory) has no reopen (`durable: false`)
 * and hands back the same instance, so only the service on top of it is reopened.
 */
export interface StoreSubject {
  /** The store's name in failure messages. */
  readonly name: string;
  /** Whether `reopen` reads the data back from where it is persisted. */
  readonly durable: boolean;
  /** The store, opened for the first time. */
  open(): Promise<EventStore>;
  /** Closes `store` and opens the same data again (or hands `store` back when not durable). */
  reopen(store: EventStore): Promise<EventStore>;
  /** Closes `store` (if any) and removes every file the subject made. */
  dispose(store: EventStore | undefined): Promise<void>;
}

/** A kind of store: makes a fresh, empty subject per run. */
export interface StoreKind {
  readonly name: string;
  subject(): StoreSubject;
}

const closeQuietly = async (store: EventStore | undefined): Promise<void> => {
  await store?.close().catch(() => undefined);
};

/** The in-memory reference store. */
export const memoryKind: StoreKind = {
  name: 'memory',
  subject: () => ({
    name: 'memory',
    durable: false,
    open: async () => memoryStore({ clock: storeClock }),
    reopen: async (store) => store,
    dispose: closeQuietly,
  }),
};

/** A store on its own fresh temporary path, created lazily on first open and removed on dispose. */
function onDisk(name: string, openAt: (dir: string) => Promise<EventStore>): StoreKind {
  return {
    name,
    subject: () => {
      let dir: string | undefined;
      return {
        name,
        durable: true,
        open: async () => {
          dir ??= await mkdtemp(join(tmpdir(), `sessionfold-cross-${name}-`));
          return openAt(dir);
        },
        reopen: async (store) => {
          await store.close();
          return openAt(dir as string);
        },
        dispose: async (store) => {
          await closeQuietly(store);
          if (dir !== undefined) await rm(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

/** The checksummed-JSONL file store in a fresh directory. */
export const fileKind: StoreKind = onDisk('file', (dir) => fileStore({ directory: join(dir, 'store'), clock: storeClock }));

/**
 * The SQLite store in a fresh database file. `synchronous: 'NORMAL'` spares a WAL sync per commit: these
 * runs compare behaviour, not durability, and the data is reread only after a clean close.
 */
export const sqliteKind: StoreKind = onDisk('sqlite', (dir) => sqliteStore({ path: join(dir, 'store.db'), clock: storeClock, synchronous: 'NORMAL' }));

/** Every store this repository ships, the reference (memory) first. */
export const STORE_KINDS: readonly StoreKind[] = [memoryKind, fileKind, sqliteKind, ...postgresKind(storeClock)];
