// Packs every published package (each folder of packages/ whose package.json is not private) into
// dist-packages/, one tarball each, as `npm publish` would ship it: the folder an application installs from
// until the packages are on the registry. `npm run pack` builds first; the folder is emptied before each run,
// so it never holds a tarball of an older version.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const destination = join(root, 'dist-packages');

const names = [];
for (const dir of readdirSync(join(root, 'packages')).sort()) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8'));
  } catch {
    continue;
  }
  if (!manifest.private) names.push(manifest.name);
}

rmSync(destination, { recursive: true, force: true });
mkdirSync(destination);
execFileSync('npm', ['pack', '--loglevel', 'warn', '--pack-destination', destination, ...names.flatMap((name) => ['-w', name])], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
});
const tarballs = readdirSync(destination).filter((file) => file.endsWith('.tgz'));
if (tarballs.length !== names.length) throw new Error(`packed ${tarballs.length} tarballs for ${names.length} packages`);
console.log(`${tarballs.length} packages packed into ${destination}:\n${tarballs.map((file) => `  ${file}`).join('\n')}`);
console.log('Install them into an application as the README says ("Installing in an application").');
