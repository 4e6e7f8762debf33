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
      readFileSync(path, 'utf8')
        .split('\n')
        .forEach((line, index) => {
          if (/(:\s*any\b|<any>|\bany\[\]|as any\b)/.test(line)) offenders.push(`${path}:${index + 1}: ${line.trim()}`);
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
