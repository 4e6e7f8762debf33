import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeBlocks, expectedOutput, publishedPackages, readmeExample, readmeSection, storeSwaps } from './packages.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const packages = publishedPackages(root);
const pgUrl = process.env['SESSIONFOLD_PG_URL'];
/** Where `npm run pack` puts the tarballs. */
const packed = join(root, 'dist-packages');

/** The package each store factory the README names comes from. */
const FACTORY_PACKAGES: Record<string, string> = {
  fileStore: '@sessionfold/store-file',
  sqliteStore: '@sessionfold/store-sqlite',
  postgresStore: '@sessionfold/store-postgres',
};

/** The README example on one store: `memoryStore()` swapped for the README's expression, with its import. */
function exampleFor(swap: { factory: string; expression: string } | undefined, example: string): string {
  if (swap === undefined) return example;
  return `import { ${swap.factory} } from '${FACTORY_PACKAGES[swap.factory]}';\n${example.replace('memoryStore()', swap.expression)}`;
}

describe('the packages, packed and installed into a new application as the README says', () => {
  const [checkoutCommands, appCommands] = codeBlocks(readmeSection(readme, 'Installing in an application'), 'sh');
  const example = readmeExample(readme);
  const swaps = storeSwaps(readme);
  let work = '';
  let app = '';

  beforeAll(() => {
    if (checkoutCommands === undefined || appCommands === undefined)
      throw new Error("the README install section needs two sh blocks: the checkout's, the application's");
    for (const command of checkoutCommands.split('\n').filter((line) => line.trim().length > 0)) {
      // This checkout is installed already (the test runs in it); `npm ci` would replace the tools running it.
      if (command.trim() === 'npm ci') continue;
      execFileSync('sh', ['-e', '-c', command], { cwd: root, stdio: 'pipe' });
    }
    work = mkdtempSync(join(tmpdir(), 'sessionfold-install-'));
    // The README's application sits beside the checkout, which it calls ../sessionfold.
    symlinkSync(root, join(work, 'sessionfold'));
    app = join(work, 'app');
    mkdirSync(app);
    // A new application: its own tools for the strict type check, nothing of this repository.
    const devDependencies = { typescript: rootManifest.devDependencies['typescript'], '@types/node': rootManifest.devDependencies['@types/node'] };
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', devDependencies }, null, 2));
    execFileSync('sh', ['-e', '-c', appCommands], {
      cwd: app,
      stdio: 'pipe',
      env: { ...process.env, npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' },
    });
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
    for (const swap of [undefined, ...swaps]) writeFileSync(join(app, `example-${swap?.factory ?? 'memoryStore'}.ts`), exampleFor(swap, example));
    writeFileSync(
      join(app, 'scoped.ts'),
      [
        "import { memoryStore, openSessionHistory } from '@sessionfold/core';",
        "import { fileStore } from '@sessionfold/store-file';",
        "import { postgresStore } from '@sessionfold/store-postgres';",
        "import { sqliteStore } from '@sessionfold/store-sqlite';",
        '',
        'export async function scoped(): Promise<void> {',
        '  await using memory = memoryStore();',
        "  await using file = await fileStore({ directory: './data' });",
        "  await using sqlite = await sqliteStore({ path: './sessions.db' });",
        '  await using postgres = await postgresStore({ connectionString: process.env.DATABASE_URL });',
        '  await using history = await openSessionHistory({ store: memory });',
        '  await history.list();',
        '  return void [file, sqlite, postgres];',
        '}',
        '',
      ].join('\n'),
    );
  }, 600_000);
  afterAll(() => {
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  it('packs every published package, and nothing else, without tests, fixtures or build info', () => {
    expect(packages.length).toBeGreaterThanOrEqual(5);
    const tarballs = readdirSync(packed).sort();
    expect(tarballs).toEqual(packages.map((p) => `${p.name.replace('@', '').replace('/', '-')}-${p.version}.tgz`).sort());
    for (const tarball of tarballs) {
      const paths = execFileSync('tar', ['-tzf', join(packed, tarball)], { encoding: 'utf8' }).split('\n');
      expect(
        paths.filter((path) => /\.test\.|\.fixture\.|tsbuildinfo|\/fixtures\/|test-children|test-workers/.test(path)),
        tarball,
      ).toEqual([]);
      expect(paths, tarball).toContain('package/LICENSE');
    }
  });

  it('names a store for each store package the README offers', () => {
    expect(swaps.map((swap) => swap.factory).sort()).toEqual(Object.keys(FACTORY_PACKAGES).sort());
    // Each swap replaces the one store of the example, or every case would quietly run the memory store.
    expect(example.split('memoryStore()').length).toBe(2);
  });

  for (const swap of [undefined, ...swaps]) {
    const factory = swap?.factory ?? 'memoryStore';
    const postgres = factory === 'postgresStore';
    it(`runs the README example on ${factory}`, { tags: postgres ? ['postgres'] : [] }, async () => {
      const program = exampleFor(swap, example);
      const dir = join(app, factory);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'example.mjs'), program);
      const database = postgres ? await freshDatabase(app) : undefined;
      try {
        const printed = execFileSync('node', ['example.mjs'], {
          cwd: dir,
          encoding: 'utf8',
          env: { ...process.env, ...(database ? { DATABASE_URL: database.url } : {}) },
        });
        expect(printed.trim()).toBe(expectedOutput(example));
      } finally {
        await database?.drop();
      }
    });
  }

  it('type-checks the example on every store, and `await using` on every store and the service, in strict TypeScript', () => {
    // tsc checks every .ts file of the application against the installed declarations, in one run.
    execFileSync('npx', ['tsc', '-p', '.', '--noEmit'], { cwd: app, stdio: 'pipe' });
  });
});

/**
 * A new database on the `SESSIONFOLD_PG_URL` server for the example's `DATABASE_URL`, since the example uses the
 * store's default schema; made with the `pg` the application installed.
 */
async function freshDatabase(app: string): Promise<{ url: string; drop(): Promise<void> }> {
  const pg = createRequire(join(app, 'package.json'))('pg') as typeof import('pg');
  const name = `install_check_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(pgUrl as string);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
