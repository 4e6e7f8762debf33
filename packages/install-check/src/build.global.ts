import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Builds every package once before the tests that need built output (`npm test` needs no separate build). */
export default function setup(): void {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  execFileSync('npx', ['tsc', '-b'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
}
