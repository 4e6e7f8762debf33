import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * The CLI's tests run the built command as a real process, so the package (and what it depends on) is built
 * once before them: `npm ci && npm test` works on a fresh clone without a separate build step.
 */
export default function buildCli(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const project = fileURLToPath(new URL('..', import.meta.url));
  execFileSync(process.execPath, [tsc, '-b', project], { stdio: 'inherit' });
}
