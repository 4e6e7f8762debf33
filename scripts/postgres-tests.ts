import type { TestTagDefinition } from 'vitest/config';

/**
 * The one rule for tests that need PostgreSQL. Such a test, or the `describe` holding it, carries the tag
 * `postgres` (`{ tags: ['postgres'] }`) and reads the server's URL from `SESSIONFOLD_PG_URL`. With the variable set,
 * tagged tests run against that server. Without it they are skipped, and the run ends with one line saying how
 * many and why; under `CI=true` a missing URL fails the run before any test, so CI never passes by skipping them.
 */
export const POSTGRES_TAG = 'postgres';

const VARIABLE = 'SESSIONFOLD_PG_URL';
const EXAMPLE_URL = 'postgres://postgres@127.0.0.1:5432/test';

type Environment = Readonly<Record<string, string | undefined>>;

/** Whether the PostgreSQL tests are skipped in `env`: no server is named (an empty value names none). */
export function postgresTestsSkipped(env: Environment = process.env): boolean {
  return !env[VARIABLE];
}

/** The `postgres` tag as vitest's configuration takes it; throws under `CI=true` when no server is named. */
export function postgresTag(env: Environment = process.env): TestTagDefinition {
  const skip = postgresTestsSkipped(env);
  if (skip && env['CI'] === 'true') {
    throw new Error(`CI=true but ${VARIABLE} is not set: the PostgreSQL tests must run on CI (e.g. ${VARIABLE}=${EXAMPLE_URL})`);
  }
  return { name: POSTGRES_TAG, description: `needs the PostgreSQL server named by ${VARIABLE}`, skip };
}

/** The line a run prints once when it skipped `count` tests for want of a server. */
export function postgresSkipLine(count: number): string {
  return `PostgreSQL: ${count} test(s) skipped: ${VARIABLE} is not set; set it (e.g. ${VARIABLE}=${EXAMPLE_URL}) to run them`;
}
