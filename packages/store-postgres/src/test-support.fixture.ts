import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';
import { postgresStore, type PostgresEventStore, type PostgresStoreOptions } from './index.js';

/**
 * The server the tests run against. Every test that needs it is tagged `postgres`: without the variable those are
 * skipped and the run says how many, once; under `CI=true` the run fails instead (scripts/postgres-tests.ts).
 */
export const PG_URL = process.env['SESSIONFOLD_PG_URL'];

/** A schema name no other test uses. */
export function freshSchema(label = 't'): string {
  return `sf_${label}_${randomBytes(6).toString('hex')}`;
}

let admin: pg.Pool | undefined;
/** A small pool of the tests' own, for raw SQL and for dropping schemas. */
export function adminPool(): pg.Pool {
  if (admin === undefined) {
    admin = new pg.Pool({ connectionString: PG_URL, max: 4 });
    admin.on('error', () => undefined);
  }
  return admin;
}

/** Drops `schema` and everything in it. */
export async function dropSchema(schema: string): Promise<void> {
  await adminPool().query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** Ends the admin pool (call from afterAll). */
export async function endAdmin(): Promise<void> {
  const pool = admin;
  admin = undefined;
  await pool?.end();
}

/** Opens a store on a fresh schema (unless one is given) with the test server's URL. */
export async function openStore(options: Partial<PostgresStoreOptions> = {}): Promise<{ store: PostgresEventStore; schema: string }> {
  const schema = options.schema ?? freshSchema();
  const store = await postgresStore({ connectionString: PG_URL as string, ...options, schema });
  return { store, schema };
}

/**
 * For a describe block: returns `fresh(label)`, a new schema name that is dropped after the block's last test
 * (the admin pool is ended then too).
 */
export function schemasDroppedAfterAll(): (label?: string) => string {
  const made: string[] = [];
  afterAll(async () => {
    for (const schema of made.splice(0)) await dropSchema(schema);
    await endAdmin();
  });
  return (label) => {
    const schema = freshSchema(label);
    made.push(schema);
    return schema;
  };
}

/** Runs `work` on a store opened on the schema `schema`, and closes the store whatever `work` does. */
export async function withStoreOn(schema: string, work: (store: PostgresEventStore, schema: string) => Promise<void>): Promise<void> {
  const { store } = await openStore({ schema });
  try {
    await work(store, schema);
  } finally {
    await store.close();
  }
}

/** Collects an async iterable. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
