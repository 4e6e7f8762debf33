import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A workspace package that is published: its name and folder. */
export interface PublishedPackage {
  name: string;
  version: string;
  directory: string;
}

/** Every package under `packages/` that is not private, in folder order. */
export function publishedPackages(root: string): PublishedPackage[] {
  const found: PublishedPackage[] = [];
  for (const folder of readdirSync(join(root, 'packages')).sort()) {
    const directory = join(root, 'packages', folder);
    let manifest: { name?: unknown; private?: unknown; version?: unknown };
    try {
      manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { name?: unknown; private?: unknown; version?: unknown };
    } catch {
      continue;
    }
    if (manifest.private !== true && typeof manifest.name === 'string' && typeof manifest.version === 'string') {
      found.push({ name: manifest.name, version: manifest.version, directory });
    }
  }
  return found;
}

/** The code block that follows the `## Use it` heading of the README, word for word. */
export function readmeExample(readme: string): string {
  const section = readme.split(/^## Use it$/m)[1];
  const block = section ? /```ts\n([\s\S]*?)```/.exec(section) : null;
  if (!block?.[1]) throw new Error('the README has no ts example under "## Use it"');
  return block[1];
}
