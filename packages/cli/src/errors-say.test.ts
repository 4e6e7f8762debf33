import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StorageError } from '@sessionfold/core/kernel';
import { sqliteStore } from '@sessionfold/store-sqlite';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { describeFailure } from './exit-codes.js';
import { freshDir, populatedFileStore, populatedSqliteStore, run } from './test-support.fixture.js';

const PG_URL = process.env['SESSIONFOLD_PG_URL'];

describe('a full disk', () => {
  it.each([
    ['the file store', 'Could not write to /data/streams/notes-1.jsonl: the disk is full (ENOSPC).'],
    ['SQLite', '@sessionfold/store-sqlite: /data/sessions.db: the disk or database is full (SQLITE_FULL); nothing was written'],
  ])('on %s is reported with a hint to free disk space', (_, message) => {
    const failure = describeFailure(new StorageError(message));
    expect(failure).toMatchObject({ exitCode: 4, message });
    expect(failure.hint).toBe('Try: free disk space where the store lives, then run the command again');
  });
});

describe('verify --json', () => {
  it('on SQLite counts the streams, records and blob its check went through', async () => {
    const store = await populatedSqliteStore();
    const ran = await run(['verify', '--json', '-s', store.url]);
    expect(ran.code, ran.stderr).toBe(0);
    const { checked } = JSON.parse(ran.stdout) as { checked: { streams: number; records: number; blobs: number } };
    expect(checked.streams).toBe(3);
    expect(checked.records).toBeGreaterThanOrEqual(3);
    expect(checked.blobs).toBe(1);
  });
});

describe('info', () => {
  it("shows the store's status one fact a line, not as one JSON line", async () => {
    const store = await populatedSqliteStore();
    const ran = await run(['info', '-s', store.url]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).not.toMatch(/\{"kind"/);
    expect(ran.stdout).toMatch(/^status$/m);
    expect(ran.stdout).toMatch(/^ {2}last position +\d+$/m);
    expect(ran.stdout).toMatch(/^ {2}holding back +none$/m);
    expect(ran.stdout).toMatch(/^ {2}journal mode +wal$/m);
  });

  it("shows a file store's writer by its process id", async () => {
    const store = await populatedFileStore();
    const ran = await run(['info', '-s', store.url]);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).not.toMatch(/\{"/);
    expect(ran.stdout).toMatch(/^status$/m);
  });
});

describe('copy into a destination that diverged', () => {
  it('says from which revision the stream differs, and both heads', async () => {
    const dir = freshDir();
    const from = await sqliteStore({ path: join(dir, 'from.db') });
    const to = await sqliteStore({ path: join(dir, 'to.db') });
    try {
      await from.append(
        'notes-1',
        [1, 2, 3].map((n) => ({ type: 'Noted', data: { n } })),
        { expectedRevision: 'no_stream' },
      );
      await to.append(
        'notes-1',
        [
          { type: 'Noted', data: { n: 1 } },
          { type: 'Noted', data: { n: 20 } },
        ],
        { expectedRevision: 'no_stream' },
      );
    } finally {
      await from.close();
      await to.close();
    }
    const ran = await run(['copy', `sqlite:${join(dir, 'from.db')}`, `sqlite:${join(dir, 'to.db')}`]);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain(
      "the destination diverged: stream notes-1 differs from the source from revision 2 on (the source's head is revision 3, the destination's revision 2)",
    );
  });
});

describe('import and the export header', () => {
  const body =
    '{"kind":"stream","stream":"notes-1","revision":1}\n{"kind":"event","stream":"notes-1","revision":1,"type":"Noted","data":{}}\n{"kind":"end","streams":1,"events":1,"blobs":0}\n';

  it('takes the header exactly as the README documents it', async () => {
    const dir = freshDir();
    const file = join(dir, 'backup.jsonl');
    writeFileSync(file, `{"kind":"header","format":"sessionfold.export","version":1}\n${body}`);
    const ran = await run(['import', file, '-s', `file:${join(dir, 'data')}`]);
    expect(ran.code, ran.stderr).toBe(0);
  });

  it('names the field of a header it refuses', async () => {
    const dir = freshDir();
    const file = join(dir, 'backup.jsonl');
    writeFileSync(file, `{"kind":"header","format":"sessionfold.export","version":2}\n${body}`);
    const ran = await run(['import', file, '-s', `file:${join(dir, 'data')}`]);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/backup\.jsonl:1: not a line of an export file \(field version: /);
  });
});

// Nothing listens on port 1: these need no server.
describe('PostgreSQL URLs the CLI refuses or cannot reach', () => {
  it('a failed connect while opening says nothing about an append that never was', async () => {
    const refused = await run(['info', '-s', 'postgres://postgres@127.0.0.1:1/test']);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/cannot connect to/);
    expect(refused.stderr).not.toMatch(/append/);
  });

  it('?schema= given twice is a usage error', async () => {
    const ran = await run(['info', '-s', 'postgres://postgres@127.0.0.1:1/test?schema=one&schema=other']);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(/\?schema= is given more than once/);
  });
});

describe('PostgreSQL errors', { tags: ['postgres'] }, () => {
  const schema = `cli_errors_${process.pid}`;
  const role = `cli_errors_role_${process.pid}`;
  const url = (name: string) => `${PG_URL}${PG_URL?.includes('?') ? '&' : '?'}schema=${name}`;
  afterAll(async () => {
    if (PG_URL === undefined) return;
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.query(`DROP ROLE IF EXISTS ${role}`);
    await client.end();
  });

  it('a store error carries a hint about the server, not about a path and free disk space', async () => {
    const store = await populatedFileStore();
    expect((await run(['copy', store.url, url(schema)])).code).toBe(0);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`CREATE ROLE ${role} LOGIN`);
      await client.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
    } finally {
      await client.end();
    }
    const asRole = new URL(url(schema));
    asRole.username = role;
    const ran = await run(['info', '-s', asRole.toString()]);
    expect(ran.code, ran.stderr).toBe(4);
    expect(ran.stderr).toMatch(/permission denied/);
    expect(ran.stderr).toMatch(/Try: .*PostgreSQL/);
    expect(ran.stderr).not.toMatch(/disk space|store path/);
  });

  it('verify --json counts what the store checked', async () => {
    const name = `${schema}_verify`;
    const store = await populatedFileStore();
    try {
      expect((await run(['copy', store.url, url(name)])).code).toBe(0);
      const ran = await run(['verify', '--json', '-s', url(name)]);
      expect(ran.code, ran.stderr).toBe(0);
      const { checked } = JSON.parse(ran.stdout) as { checked: { streams: number; records: number; blobs: number } };
      expect(checked).toMatchObject({ streams: 3, blobs: 1 });
      expect(checked.records).toBeGreaterThanOrEqual(3);
    } finally {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      await client.end();
    }
  });
});
