import { defineProject, type TestProjectInlineConfiguration } from 'vitest/config';

/** The one list of test projects; `vitest.config.ts` loads it, and `npm test` fails if any collects no tests. */
const project = (name: string, root: string, testTimeout = 30_000): TestProjectInlineConfiguration =>
  ({
    extends: true,
    ...defineProject({ test: { name, root, include: ['src/**/*.test.ts'], testTimeout, hookTimeout: testTimeout } }),
  }) as TestProjectInlineConfiguration;

export default [
  project('core', 'packages/core'),
  project('atomic-write', 'packages/atomic-write'),
  project('sessionfile', 'packages/sessionfile'),
  project('store-file', 'packages/store-file', 120_000),
  project('store-sqlite', 'packages/store-sqlite', 120_000),
  project('store-postgres', 'packages/store-postgres', 120_000),
  project('conformance', 'packages/conformance'),
  project('cross-store', 'packages/cross-store', 300_000),
  // An application written as the README shows, on every store (PostgreSQL with SESSIONFOLD_PG_URL; required under CI=true).
  project('app-check', 'packages/app-check', 120_000),
  project('bench', 'packages/bench'),
  project('quickstart', 'examples/quickstart'),
  // Runs the built `sessionfold` command against file, SQLite and (with SESSIONFOLD_PG_URL) PostgreSQL stores.
  project('example-migrate', 'examples/migrate', 120_000),
  project('example-http-api', 'examples/http-api', 60_000),
  project('example-resume', 'examples/resume', 120_000),
  project('example-custom-store', 'examples/custom-store', 120_000),
  // Starts worker processes under load; each run takes a few seconds.
  project('example-worker', 'examples/worker', 60_000),
  project('example-observability', 'examples/observability'),
  project('install-check', 'packages/install-check', 600_000),
  // The CLI's tests spawn the built command; the run builds every package first (vitest.config.ts).
  project('cli', 'packages/cli', 120_000),
  // Drives the page `sessionfold inspect` serves in headless Chromium (Debian's `chromium`), on file, SQLite and PostgreSQL stores.
  project('inspector', 'packages/inspector', 120_000),
];
