import { createHash } from 'node:crypto';
import pg from 'pg';
import type { StoreUnderTest } from '@sessionfold/conformance';
import { postgresStore } from '@sessionfold/store-postgres';

const url = process.env['SESSIONFOLD_PG_URL'];
if (url === undefined) {
  console.info('cross-store: PostgreSQL left out; set SESSIONFOLD_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to include it');
}

/** The schema of a subject's directory: each fresh temporary directory names a schema of its own. */
const schemaOf = (dir: string): string => `sf_cross_${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`;

/**
 * The PostgreSQL store on a fresh schema per subject, dropped on dispose; none at all without
 * `SESSIONFOLD_PG_URL`, so the comparisons run on the other stores alone.
 */
export function postgresStores(clock: () => Date): StoreUnderTest[] {
  if (url === undefined) return [];
  return [
    {
      name: 'postgres',
      durable: true,
      open: (dir) => postgresStore({ connectionString: url, schema: schemaOf(dir), clock }),
      dispose: (dir) => dropPostgresSchema(schemaOf(dir)),
    },
  ];
}

/** Drops `schema` and everything in it from the `SESSIONFOLD_PG_URL` database (nothing without that variable). */
export async function dropPostgresSchema(schema: string): Promise<void> {
  if (url === undefined) return;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}
