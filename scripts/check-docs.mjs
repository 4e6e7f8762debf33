// After `typedoc`: every module of the API reference has a name. A package's root entry point that is not merged
// into the package's page (`@mergeModuleWith <project>` on its module comment) becomes a module without one,
// shown as `@sessionfold/<package>.`.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const modules = join(fileURLToPath(new URL('..', import.meta.url)), 'docs', 'api', 'modules');
const unnamed = readdirSync(modules).filter((file) => file.endsWith('..html'));
if (unnamed.length > 0) {
  console.error(`modules without a name in docs/api (merge the root entry point into its package): ${unnamed.join(', ')}`);
  process.exit(1);
}
