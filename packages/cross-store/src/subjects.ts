import { join } from 'node:path';
import { storeLifecycle, type StoreLifecycle, type StoreUnderTest } from '@sessionfold/conformance';
import { memoryStore } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { postgresStores } from './postgres-subject.js';

/** Every store records this as `recordedAt`; the comparisons drop it anyway, but a fixed value keeps dumps stable. */
const STORE_TIME = '2026-07-23T00:00:00.000Z';
const storeClock = (): Date => new Date(STORE_TIME);

/** One store under test, from its creation to its removal (see `StoreLifecycle` in `@sessionfold/conformance`). */
export type StoreSubject = StoreLifecycle;

/** A kind of store: makes a fresh, empty subject per run. */
export interface StoreKind {
  readonly name: string;
  subject(): StoreSubject;
}

/** The kind that runs `store` on a fresh temporary directory per subject. */
export function kindOf(store: StoreUnderTest): StoreKind {
  return { name: store.name, subject: () => storeLifecycle(store, { prefix: 'sessionfold-cross-' }) };
}

/** The in-memory reference store. */
export const memoryKind: StoreKind = kindOf({ name: 'memory', durable: false, open: async () => memoryStore({ clock: storeClock }) });

/** The checksummed-JSONL file store in a fresh directory. */
export const fileKind: StoreKind = kindOf({
  name: 'file',
  durable: true,
  open: (dir) => fileStore({ directory: join(dir, 'store'), clock: storeClock }),
});

/**
 * The SQLite store in a fresh database file. `synchronous: 'NORMAL'` spares a WAL sync per commit: these
 * runs compare behaviour, not durability, and the data is reread only after a clean close.
 */
export const sqliteKind: StoreKind = kindOf({
  name: 'sqlite',
  durable: true,
  open: async (dir) => await sqliteStore({ path: join(dir, 'store.db'), clock: storeClock, synchronous: 'NORMAL' }),
});

/** Every store this repository ships, the reference (memory) first. */
export const STORE_KINDS: readonly StoreKind[] = [memoryKind, fileKind, sqliteKind, ...postgresStores(storeClock).map(kindOf)];
