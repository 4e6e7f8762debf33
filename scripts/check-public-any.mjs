// Fails when a published declaration file exposes `any`: types are the documentation of first resort.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const roots = readdirSync('packages').map((name) => join('packages', name, 'dist'));
const offenders = [];
const walk = (dir) => {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  for (const entry of entries) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) walk(path);
    else if (path.endsWith('.d.ts')) {
      // Doc comments and string literals may say "any" in prose; only the type keyword counts.
      const code = readFileSync(path, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' '))
        .replace(/\/\/.*$/gm, '')
        .replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, (literal) => literal.replace(/[^\n]/g, ' '));
      code.split('\n').forEach((line, index) => {
        if (/\bany\b/.test(line)) offenders.push(`${path}:${index + 1}: ${line.trim()}`);
      });
    }
  }
};
roots.forEach(walk);
if (offenders.length > 0) {
  console.error(`Public declarations expose \`any\`:\n${offenders.join('\n')}`);
  process.exit(1);
}
console.log(`lint: no \`any\` in the public declarations of ${roots.length} packages`);
