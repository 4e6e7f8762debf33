import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSessionHistory } from '@sessionfold/core';
import { sqliteStore } from '@sessionfold/store-sqlite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MigrationResult, runMigration } from './migrate.js';
import { readRecords } from './records.js';
import { sessionfold } from './sessionfold-command.js';

const pgUrl = process.env['SESSIONFOLD_PG_URL'] || undefined;
if (pgUrl === undefined)
  console.info('example-migrate: the PostgreSQL step is skipped; set SESSIONFOLD_PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it');

describe('moving the quick start’s file store to SQLite and PostgreSQL with the sessionfold command', () => {
  let dir = '';
  const lines: string[] = [];
  let result: MigrationResult;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sessionfold-migrate-'));
    result = await runMigration(dir, { postgresUrl: pgUrl, say: (line) => lines.push(line) });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints every step, as the README shows', () => {
    const copied = String.raw`\d+ stream\(s\), \d+ event\(s\) and 1 blob\(s\) copied, 0 already up to date; both stores fold every stream to identical state`;
    const again = String.raw`   copied again: nothing new, \d+ stream\(s\) already up to date; the change feed is unchanged`;
    expect(lines[0]).toBe(`sessionfold migrate: stores in ${dir}`);
    expect(lines[1]).toBe('1. filled file:file-store with the quick start and one session in flight: 2 record(s), 1 in flight, 1 staged object(s)');
    expect(lines[2]).toMatch(new RegExp(`^2\\. sessionfold copy file:file-store sqlite:sessions\\.db: ${copied}$`));
    expect(lines.slice(3, 5)).toEqual([
      '   sessionfold verify --store sqlite:sessions.db: exit 0, no problems',
      "   the service on SQLite: 2 record(s); list, get, command heads and staged objects identical to the file store's",
    ]);
    expect(lines[5]).toMatch(new RegExp(`^${again}$`));
    if (pgUrl === undefined) {
      expect(lines.slice(6)).toEqual([
        '3. PostgreSQL skipped: set SESSIONFOLD_PG_URL to a postgres:// URL to copy there too',
        "Done: every copy holds records identical to the file store's.",
      ]);
    } else {
      const schema = '(sessionfold_migrate_[0-9a-f]{8})';
      expect(lines[6]).toMatch(new RegExp(`^3\\. sessionfold copy sqlite:sessions\\.db postgres://\\S+\\?schema=${schema}: ${copied}$`));
      expect(lines[7]).toMatch(new RegExp(`^   sessionfold verify --store postgres://\\S+\\?schema=${schema}: exit 0, no problems$`));
      expect(lines[8]).toBe("   the service on PostgreSQL: 2 record(s); list, get, command heads and staged objects identical to the file store's");
      expect(lines[9]).toMatch(new RegExp(`^${again}$`));
      expect(lines[10]).toMatch(new RegExp(`^   dropped the schema ${schema}$`));
      expect(lines.slice(11)).toEqual(["Done: every copy holds records identical to the file store's."]);
    }
  });

  it('prints what the README shows, counts included', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const shown = /## What it prints\n\n```text\n([\s\S]*?)```/.exec(readme)?.[1]?.trimEnd().split('\n');
    expect(shown).toBeDefined();
    // What differs from run to run: the directory, the server's URL and the fresh schema's name.
    const general = (line: string) =>
      line
        .replace(/stores in .*$/, 'stores in …')
        .replace(/postgres:\/\/\S+\?schema=/g, 'postgres://…?schema=')
        .replace(/sessionfold_migrate_[0-9a-f]{8}/g, 'sessionfold_migrate_…');
    const readmeLines = (shown ?? []).map(general);
    const printed = lines.map(general);
    if (pgUrl !== undefined) {
      expect(printed).toEqual(readmeLines);
    } else {
      // Without PostgreSQL, step 3 is one line (the README says which) instead of the block the README shows.
      const step3 = readmeLines.findIndex((line) => line.startsWith('3. '));
      expect(printed.slice(0, step3)).toEqual(readmeLines.slice(0, step3));
      expect(printed.at(-1)).toBe(readmeLines.at(-1));
    }
  });

  it('each copy verifies and the service on it returns records identical to the file store’s', () => {
    expect(result.ok).toBe(true);
    expect(result.destinations.map((destination) => destination.name)).toEqual(pgUrl === undefined ? ['SQLite'] : ['SQLite', 'PostgreSQL']);
    // The source holds what the comparison should cover: a receipt, a live session with commands, an object.
    expect(result.source.list.map((record) => record.phase).sort()).toEqual(['active', 'complete']);
    expect(result.source.commandHeads).toHaveLength(1);
    expect(result.source.objects).toHaveLength(1);
    for (const destination of result.destinations) {
      expect(destination.verifyExitCode).toBe(0);
      expect(destination.copy).toMatchObject({ identical: true, mismatches: [], unchanged: 0, blobs: 1 });
      expect(destination.records).toEqual(result.source);
      expect(destination.identical).toBe(true);
    }
  });

  it('copying again changes nothing', async () => {
    for (const destination of result.destinations) {
      expect(destination.copyAgain).toMatchObject({ events: 0, blobs: 0, unchanged: destination.copy.streams, identical: true });
      expect(destination.feedUnchanged).toBe(true);
    }
    // Once more on the SQLite file the run left behind, from outside the example.
    const feed = () => sessionfold(['tail', '--store', 'sqlite:sessions.db', '--json'], { cwd: dir });
    const before = await feed();
    const again = await sessionfold(['copy', 'file:file-store', 'sqlite:sessions.db', '--json'], { cwd: dir });
    const after = await feed();
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ events: 0, blobs: 0, unchanged: result.destinations[0]?.copy.streams, identical: true });
    expect(before.code).toBe(0);
    expect(after.stdout).toBe(before.stdout);
    const store = await sqliteStore({ path: join(dir, 'sessions.db'), readOnly: true });
    const history = await openSessionHistory({ store, readOnly: true });
    try {
      expect(
        await readRecords(
          history,
          result.source.objects.map((object) => object.ref),
        ),
      ).toEqual(result.source);
    } finally {
      await history.close();
      await store.close();
    }
  });

  it('leaves no PostgreSQL schema behind', { tags: ['postgres'] }, async () => {
    const schema = new URL(result.destinations[1]?.url ?? 'postgres://x').searchParams.get('schema');
    expect(schema).toMatch(/^sessionfold_migrate_/);
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      const found = await client.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [schema]);
      expect(found.rowCount).toBe(0);
    } finally {
      await client.end();
    }
  });
});
