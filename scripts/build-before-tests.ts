import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * Builds every package once before any test runs: the CLI's and the install check's tests run built output, so
 * `npm ci && npm test` works on a fresh clone without a separate build step. Incremental: cheap when up to date.
 */
export default function buildBeforeTests(): void {
  // Projects inherit the root's global setup: build once per test run, not once per project.
  if (process.env['SESSIONFOLD_TESTS_BUILT'] === '1') return;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const root = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, [tsc, '-b', root], { stdio: 'inherit' });
  process.env['SESSIONFOLD_TESTS_BUILT'] = '1';
}
