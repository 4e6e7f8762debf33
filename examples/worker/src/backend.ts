import type { EventStore } from '@sessionfold/core';
import { postgresStore } from '@sessionfold/store-postgres';
import { sqliteStore } from '@sessionfold/store-sqlite';
import pg from 'pg';

/** Where the fleet keeps its sessions: one SQLite file, or one PostgreSQL schema. Passed to each worker on its command line. */
export type Backend = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string; schema: string };

/** Opens the store of `backend`; every process opens its own. */
export async function openStore(backend: Backend): Promise<EventStore> {
  if (backend.kind === 'sqlite') return await sqliteStore({ path: backend.path });
  return await postgresStore({ connectionString: backend.url, schema: backend.schema });
}

/** A PostgreSQL schema of its own for one run, so runs never see each other's sessions. */
export function freshSchema(): string {
  return `example_worker_${process.pid}_${Date.now().toString(36)}`;
}

/** Removes a run's PostgreSQL schema and everything in it. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** The backend as one command-line argument (the PostgreSQL URL stays in the environment). */
export function backendArgument(backend: Backend): string {
  return backend.kind === 'sqlite' ? `sqlite:${backend.path}` : `postgres:${backend.schema}`;
}

/** Reads a backend argument written by `backendArgument`. */
export function parseBackendArgument(argument: string, url = process.env.SESSIONFOLD_PG_URL): Backend {
  if (argument.startsWith('sqlite:')) return { kind: 'sqlite', path: argument.slice('sqlite:'.length) };
  if (argument.startsWith('postgres:') && url) return { kind: 'postgres', url, schema: argument.slice('postgres:'.length) };
  throw new Error(`example-worker: expected sqlite:<file> or postgres:<schema> (with SESSIONFOLD_PG_URL set), got ${JSON.stringify(argument)}`);
}
