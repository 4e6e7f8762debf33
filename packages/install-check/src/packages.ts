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

/** The text of the README under `## <heading>`, up to the next `## ` heading. */
export function readmeSection(readme: string, heading: string): string {
  const start = readme.search(new RegExp(`^## ${heading}$`, 'm'));
  if (start < 0) throw new Error(`the README has no "## ${heading}" section`);
  const rest = readme.slice(start + heading.length + 3);
  const end = rest.search(/^## /m);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The code blocks of `section` fenced as `lang`, word for word, in order. */
export function codeBlocks(section: string, lang: string): string[] {
  return [...section.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\``, 'gm'))].map((match) => match[1] as string);
}

/** The code block that follows the `## Use it` heading of the README, word for word. */
export function readmeExample(readme: string): string {
  const block = codeBlocks(readmeSection(readme, 'Use it'), 'ts')[0];
  if (!block) throw new Error('the README has no ts example under "## Use it"');
  return block;
}

/**
 * What the example prints, as the README shows it: its last line that is a comment alone, right after the
 * `console.log(…)` it shows (`// complete true [ … ]`). The one place the install check learns the expected output.
 */
export function expectedOutput(example: string): string {
  const comments = [...example.matchAll(/^\s*\/\/ ([^\n]*)$/gm)];
  const printed = comments.at(-1)?.[1]?.trim();
  if (!printed) throw new Error('the README example has no comment line showing what it prints');
  return printed;
}

/**
 * The stores the "Use it" section says to swap `memoryStore()` for: each backquoted `await <factory>(…)` of the
 * section, with the factory's name, as the README writes it.
 */
export function storeSwaps(readme: string): Array<{ factory: string; expression: string }> {
  const section = readmeSection(readme, 'Use it');
  return [...section.matchAll(/`(await (\w+)\([^`]*\))`/g)].map((match) => ({ factory: match[2] as string, expression: match[1] as string }));
}
