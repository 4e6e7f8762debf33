import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { freshDir, jsonLines, populatedFileStore, run } from './test-support.fixture.js';

const PG_URL = process.env['SESSIONFOLD_PG_URL'];
const UNKNOWN_SESSION = '00000000-0000-4000-8000-000000000000';

/** Whether `schema` exists in the server at `PG_URL`. */
async function schemaExists(schema: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema]);
    return found.rowCount === 1;
  } finally {
    await client.end();
  }
}

describe('commands that change a store never create one for a mistyped location', () => {
  it.each([
    ['compact --all', ['compact', '--all']],
    ['delete', ['delete', UNKNOWN_SESSION]],
  ])('%s on a missing directory, SQLite file or empty directory exits 3 and creates nothing', async (_, args) => {
    const dir = freshDir();
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    for (const url of [join(dir, 'typo'), `file:${join(dir, 'typo-too')}`, `sqlite:${join(dir, 'typo.db')}`, empty]) {
      const result = await run([...args, '-s', url]);
      expect(result.code, `${args.join(' ')} -s ${url}`).toBe(3);
      expect(result.stderr).toMatch(/no store at/);
    }
    expect(readdirSync(dir)).toEqual(['empty']);
    expect(readdirSync(empty)).toEqual([]);
  });

  it('compact and delete on a schema that exists but holds no store yet exit 3 and create no table', { tags: ['postgres'] }, async () => {
    if (PG_URL === undefined) throw new Error('unreachable: tagged postgres, skipped without SESSIONFOLD_PG_URL');
    const schema = `cli_edges_empty_${process.pid}`;
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA ${schema}`);
      for (const args of [['compact', '--all'], ['delete', UNKNOWN_SESSION], ['info']]) {
        const result = await run([...args, '-s', `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}`]);
        expect(result.code, args.join(' ')).toBe(3);
      }
      const tables = await client.query('SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1', [schema]);
      expect(tables.rows[0]).toEqual({ n: 0 });
    } finally {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
  });

  it('still compacts and deletes in an existing store', async () => {
    const store = await populatedFileStore();
    expect((await run(['compact', '--all', '-s', store.url])).code).toBe(0);
    expect((await run(['delete', store.sessionId, '-s', store.url])).code).toBe(0);
  });
});

describe('PostgreSQL locations', { tags: ['postgres'] }, () => {
  const schema = `cli_edges_${process.pid}`;
  const url = (name: string) => `${PG_URL}${PG_URL?.includes('?') ? '&' : '?'}schema=${name}`;
  afterAll(async () => {
    if (PG_URL === undefined) return;
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  it('a schema that does not exist is not found (exit 3) for reading and for changing, and is not created', async () => {
    for (const args of [['info'], ['list'], ['compact', '--all'], ['delete', UNKNOWN_SESSION]]) {
      const result = await run([...args, '--json', '-s', url(schema)]);
      expect(result.code, args.join(' ')).toBe(3);
      expect(result.stderr).toMatch(new RegExp(`schema ${schema} does not exist`));
      expect(result.stderr).toMatch(/Try: check the database and \?schema=/);
      expect(jsonLines(result.stdout)[0]).toMatchObject({ ok: false, error: { exitCode: 3, code: 'not_found' } });
    }
    expect(await schemaExists(schema)).toBe(false);
  });

  it('a database that does not exist is not found; a server that cannot be reached is a storage error about the connection', async () => {
    const noDatabase = new URL(PG_URL as string);
    noDatabase.pathname = `/no_such_database_${process.pid}`;
    const missing = await run(['info', '-s', noDatabase.toString()]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/does not exist/);
    const refused = await run(['info', '-s', 'postgres://postgres@127.0.0.1:1/test']);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/cannot connect to/);
    expect(refused.stderr).toMatch(/Try: check that PostgreSQL runs/);
    expect(refused.stderr).not.toMatch(/disk space/);
  });

  it('info gives the size the server reports once the store exists', async () => {
    const store = await populatedFileStore();
    expect((await run(['copy', store.url, url(schema)])).code).toBe(0);
    const info = JSON.parse((await run(['info', '--json', '-s', url(schema)])).stdout) as { sizeOnDisk: unknown };
    expect(typeof info.sizeOnDisk).toBe('number');
    expect(info.sizeOnDisk as number).toBeGreaterThan(0);
    expect((await run(['info', '-s', url(schema)])).stdout).not.toMatch(/size on disk\s+n\/a/);
  });
});

describe('files named on the command line', () => {
  it('a directory where a file is expected is a usage error, and import-legacy imports nothing then', async () => {
    const dir = freshDir();
    const legacy = join(dir, 'legacy');
    mkdirSync(legacy);
    writeFileSync(join(legacy, 'a.session-control'), '');
    const target = join(dir, 'target');
    const importing = await run(['import', legacy, '-s', target]);
    expect(importing.code).toBe(2);
    expect(importing.stderr).toMatch(/is a directory, not a file/);
    // A pipe would be read once: import checks its file, then loads it.
    if (existsSync('/dev/null')) expect((await run(['import', '/dev/null', '-s', target])).stderr).toMatch(/not a regular file/);
    const legacyImport = await run(['import-legacy', legacy, '--completed-list', legacy, '-s', target]);
    expect(legacyImport.code).toBe(2);
    expect(legacyImport.stderr).toMatch(/is a directory, not a completed list/);
    expect(existsSync(target)).toBe(false);
  });

  it('export --out into a directory that does not exist is not found (exit 3), and nothing is created', async () => {
    const store = await populatedFileStore();
    const out = join(freshDir(), 'missing', 'backup.jsonl');
    const result = await run(['export', '--out', out, '-s', store.url]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/its directory does not exist/);
    expect(existsSync(out)).toBe(false);
  });

  it('an export file cut short before its first line end, or empty, is named with a line that exists', async () => {
    const store = await populatedFileStore();
    const dir = freshDir();
    const whole = (await run(['export', '-s', store.url])).stdout.split('\n').filter((line) => line !== '');
    const cut = join(dir, 'cut.jsonl');
    writeFileSync(cut, `${whole.slice(0, 3).join('\n')}\n`);
    const result = await run(['import', cut, '-s', join(dir, 'target')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cut\.jsonl:4: the file ends after line 3 without its end line/);
    const empty = join(dir, 'empty.jsonl');
    writeFileSync(empty, '');
    expect((await run(['import', empty, '-s', join(dir, 'target')])).stderr).toMatch(/the file is empty/);
  });
});

describe('values given to options', () => {
  it('are named as the option written, with the value given', async () => {
    const store = await populatedFileStore();
    const lines = await run(['tail', '-n', 'abc', '-s', store.url]);
    expect(lines.code).toBe(2);
    expect(lines.stderr).toMatch(/--lines: expected a whole number \(got "abc"\)/);
    const from = await run(['tail', '--from', 'bogus', '-s', store.url]);
    expect(from.code).toBe(2);
    expect(from.stderr).toMatch(/--from: expected start, end or a position/);
    const revision = await run(['replay', store.sessionId, '--to-revision', '-1', '-s', store.url]);
    expect(revision.code).toBe(2);
    expect(revision.stderr).toMatch(/--to-revision/);
  });

  it('--version --json is a JSON document; show names the session it did not find', async () => {
    expect(JSON.parse((await run(['--version', '--json'])).stdout)).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    const store = await populatedFileStore();
    const shown = await run(['show', UNKNOWN_SESSION, '-s', store.url]);
    expect(shown.code).toBe(3);
    expect(shown.stderr).toContain(`no session ${UNKNOWN_SESSION}`);
  });

  it('replay past the stream’s end says where it ends', async () => {
    const store = await populatedFileStore();
    const result = await run(['replay', store.sessionId, '--to-revision', '999', '-s', store.url]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/the stream ends at revision \d+, before --to-revision 999/);
  });
});
