import { join } from 'node:path';
import { memoryStore, type DisposableEventStore } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { postgresStore } from '@sessionfold/store-postgres';
import { sqliteStore } from '@sessionfold/store-sqlite';

/** Every store this repository ships, by name. */
export const OWNED_STORE_KINDS = ['memory', 'file', 'sqlite', 'postgres'] as const;
export type OwnedStoreKind = (typeof OWNED_STORE_KINDS)[number];

/**
 * Opens a store as an application does, through its factory with its own connection settings: `where` is a fresh
 * directory, or for PostgreSQL (on `SESSIONFOLD_PG_URL`, with a pool the store makes) a fresh schema name.
 */
export async function openOwnedStore(kind: OwnedStoreKind, where: string, options: { readOnly?: boolean } = {}): Promise<DisposableEventStore> {
  const readOnly = options.readOnly === true;
  switch (kind) {
    case 'memory':
      return memoryStore();
    case 'file':
      return await fileStore({ directory: join(where, 'store'), readOnly });
    case 'sqlite':
      return await sqliteStore({ path: join(where, 'store.db'), readOnly });
    case 'postgres':
      return await postgresStore({ connectionString: process.env['SESSIONFOLD_PG_URL'] ?? '', schema: where, readOnly });
  }
}
