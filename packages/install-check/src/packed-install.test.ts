import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedPackages, readmeExample } from './packages.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
const packages = publishedPackages(root);
const published = new Set(packages.map((p) => p.name));
const pgUrl = process.env['SESSIONFOLD_PG_URL'];

/** How the README example opens each store: the import it needs and the expression that makes the store. */
const STORES: Array<{ name: string; package?: string; importLine: string; open: string; when: boolean; why?: string }> = [
  { name: 'memory', importLine: '', open: 'memoryStore()', when: true },
  {
    name: 'file',
    package: '@sessionfold/store-file',
    importLine: "import { fileStore } from '@sessionfold/store-file';",
    open: "await fileStore({ directory: './data' })",
    when: true,
  },
  {
    name: 'sqlite',
    package: '@sessionfold/store-sqlite',
    importLine: "import { sqliteStore } from '@sessionfold/store-sqlite';",
    open: "await sqliteStore({ path: './sessions.db' })",
    when: true,
  },
  {
    name: 'postgres',
    package: '@sessionfold/store-postgres',
    importLine: "import { postgresStore } from '@sessionfold/store-postgres';",
    open: `await postgresStore({ connectionString: ${JSON.stringify(pgUrl ?? '')}, schema: 'install_check_' + process.pid })`,
    when: pgUrl !== undefined,
    why: 'SESSIONFOLD_PG_URL is not set',
  },
];

/**
 * The README example for one store: the same lines, with the store it names swapped as the README says, held in
 * a variable so the program can close it (a pool or a lock would otherwise outlive the example).
 */
function exampleFor(store: (typeof STORES)[number], example: string): string {
  const body = example.replace('openSessionHistory({ store: memoryStore() })', 'openSessionHistory({ store })');
  return `${store.importLine}\n${body.replace(/^(import .*\n)+/, (imports) => `${imports}const store = ${store.open};\n`)}\nawait store.close();\n`;
}

describe('the published packages, installed from their tarballs into a new application', () => {
  let app = '';
  let work = '';
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'sessionfold-install-'));
    const tarballs = join(work, 'tarballs');
    mkdirSync(tarballs);
    execFileSync('npm', ['pack', '--pack-destination', tarballs, ...packages.flatMap((p) => ['-w', p.name])], { cwd: root, stdio: 'pipe' });
    app = join(work, 'app');
    mkdirSync(app);
    const dependencies: Record<string, string> = {};
    for (const file of readdirSync(tarballs)) {
      const name = packages.find((p) => file === `${p.name.replace('@', '').replace('/', '-')}-${p.version}.tgz`)?.name;
      if (name) dependencies[name] = `file:../tarballs/${file}`;
    }
    dependencies['typescript'] = rootManifest.devDependencies['typescript'] as string;
    dependencies['@types/node'] = rootManifest.devDependencies['@types/node'] as string;
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'app', private: true, type: 'module', dependencies, allowScripts: { 'better-sqlite3': true } }, null, 2),
    );
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: app, stdio: 'pipe' });
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
      }),
    );
  }, 600_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('packs every published package without tests, fixtures or build info', () => {
    expect(packages.length).toBeGreaterThanOrEqual(5);
    for (const p of packages) {
      const listed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '-w', p.name], { cwd: root, encoding: 'utf8' })) as Array<{
        files: Array<{ path: string }>;
      }>;
      const paths = listed[0]?.files.map((f) => f.path) ?? [];
      expect(
        paths.filter((path) => /\.test\.|\.fixture\.|tsbuildinfo|\/fixtures\/|test-children|test-workers/.test(path)),
        p.name,
      ).toEqual([]);
      expect(paths, p.name).toContain('LICENSE');
    }
  });

  for (const store of STORES) {
    it.skipIf(!store.when)(`runs the README example on the ${store.name} store, in JavaScript and in strict TypeScript`, (context) => {
      if (store.package && !published.has(store.package)) {
        context.skip(`${store.package} is not a package of this repository`);
        return;
      }
      const example = exampleFor(store, readmeExample(readFileSync(join(root, 'README.md'), 'utf8')));
      // The swap must have happened, or every case would quietly run the memory store.
      expect(example).toContain('openSessionHistory({ store })');
      const dir = join(app, store.name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'example.mjs'), example);
      const printed = execFileSync('node', ['example.mjs'], { cwd: dir, encoding: 'utf8' });
      expect(printed.trim()).toBe("complete true [ 'Hello!', 'Hi! How can I help?' ] { topic: 'greetings', turns: 1 }");
      writeFileSync(join(app, `example-${store.name}.ts`), example);
      // tsc type-checks every .ts file of the application against the installed declarations.
      execFileSync('npx', ['tsc', '-p', '.', '--noEmit'], { cwd: app, stdio: 'pipe' });
    });
  }
  if (pgUrl === undefined) console.log('install-check: the PostgreSQL example is skipped: set SESSIONFOLD_PG_URL to run it');
});
