import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { EventStore } from '@sessionfold/core';
import { postgresStore } from '@sessionfold/store-postgres';
import type { StoreKind } from './subjects.js';

const url = process.env['SESSIONFOLD_PG_URL'];
if (url === undefined) {
  console.info('cross-store: PostgreSQL left out; set SESSIONFOLD_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to include it');
}

/**
 * The PostgreSQL store on a fresh random schema per subject, dropped on dispose; no kind at all without
 * `SESSIONFOLD_PG_URL`, so the comparisons run on the other stores alone.
 */
export function postgresKind(clock: () => Date): StoreKind[] {
  if (url === undefined) return [];
  const openAt = (schema: string) => postgresStore({ connectionString: url, schema, clock });
  return [
    {
      name: 'postgres',
      subject: () => {
        const schema = `sf_cross_${randomBytes(6).toString('hex')}`;
        return {
          name: 'postgres',
          durable: true,
          open: () => openAt(schema),
          reopen: async (store: EventStore) => {
            await store.close();
            return openAt(schema);
          },
          dispose: async (store: EventStore | undefined) => {
            await store?.close().catch(() => undefined);
            const client = new pg.Client({ connectionString: url });
            await client.connect();
            try {
              await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
            } finally {
              await client.end();
            }
          },
        };
      },
    },
  ];
}
