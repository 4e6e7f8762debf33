import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * Builds every package once before any test runs: the CLI's and the install check's tests run built output, so
 * `npm ci && npm test` works on a fresh clone without a separate build step. Incremental: cheap when up to date.
 * Under `CI=true` it also refuses to start without `SESSIONFOLD_PG_URL`, so no PostgreSQL test is skipped there.
 */
export default function buildBeforeTests(): void {
  // Projects inherit the root's global setup: build once per test run, not once per project.
  if (process.env['SESSIONFOLD_TESTS_BUILT'] === '1') return;
  // On CI the PostgreSQL tests must run: a missing server fails the run instead of skipping them.
  if (process.env['CI'] === 'true' && !process.env['SESSIONFOLD_PG_URL']) {
    throw new Error('CI=true but SESSIONFOLD_PG_URL is not set: the PostgreSQL tests must run on CI (e.g. postgres://postgres@127.0.0.1:5432/test)');
  }
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, [tsc, '-b', root], { stdio: 'inherit' });
  process.env['SESSIONFOLD_TESTS_BUILT'] = '1';
}
