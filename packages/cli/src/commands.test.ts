import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, fileDigests, freshDir, jsonLines, populatedFileStore, populatedSqliteStore, run } from './test-support.fixture.js';

describe('the command line itself', () => {
  it('prints help with examples and exit codes, and its version, with exit 0', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    expect(help.stdout).toContain('import-legacy');
    for (const command of [
      'info',
      'list',
      'show',
      'replay',
      'streams',
      'read',
      'tail',
      'verify',
      'export',
      'import',
      'compact',
      'copy',
      'delete',
      'import-legacy',
    ]) {
      const own = await run([command, '--help']);
      expect(own.code, command).toBe(0);
      expect(own.stdout, command).toContain('Examples:');
      expect(own.stdout, command).toContain('--json');
    }
    const version = await run(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('exits 2 on a usage error: unknown command or option, bad value, no store', async () => {
    expect((await run(['bogus'])).code).toBe(2);
    const unknown = await run(['info', '--bogus', '--json']);
    expect(unknown.code).toBe(2);
    expect(jsonLines(unknown.stdout)[0]).toMatchObject({ ok: false, error: { exitCode: 2, code: 'usage' } });
    expect((await run(['list', '--phase', 'sleeping', '-s', freshDir()])).code).toBe(2);
    expect((await run(['tail', '-n', 'many', '-s', freshDir()])).code).toBe(2);
    const noStore = await run(['info', '--json']);
    expect(noStore.code).toBe(2);
    expect(jsonLines(noStore.stdout)[0]).toMatchObject({ ok: false, error: { exitCode: 2 } });
    expect((await run(['info', '-s', 'mysql://localhost/db'])).code).toBe(2);
  });

  it('exits 3 for a store, session or stream that is not there, creating nothing', async () => {
    const dir = freshDir();
    const id = '00000000-0000-4000-8000-000000000000';
    const readOnly = [
      ['info'],
      ['list'],
      ['show', id],
      ['replay', id],
      ['streams'],
      ['read', 'catalog'],
      ['tail'],
      ['verify'],
      ['export'],
      ['compact', '--all', '--dry-run'],
      ['delete', id, '--dry-run'],
    ];
    for (const url of [join(dir, 'missing'), `file:${join(dir, 'missing')}`, `sqlite:${join(dir, 'missing.db')}`]) {
      for (const args of readOnly) expect((await run([...args, '-s', url])).code, `${args.join(' ')} ${url}`).toBe(3);
    }
    expect(readdirSync(dir)).toEqual([]);
    const { url } = await populatedFileStore();
    expect((await run(['show', '00000000-0000-4000-8000-000000000000', '-s', url])).code).toBe(3);
    expect((await run(['read', 'no-such-stream', '-s', url])).code).toBe(3);
  });

  it('ends quietly with exit 0 when the reader closes the pipe early', async () => {
    const { url } = await populatedFileStore();
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [BIN, 'tail', '-s', url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    expect(stderr).not.toMatch(/EPIPE/);
  });

  it('exits 4 with the reason and a hint when the PostgreSQL server cannot be reached', async () => {
    // Port 1 on the loopback: nothing listens there, so the connection is refused at once.
    const result = await run(['info', '-s', 'postgres://user@127.0.0.1:1/db', '--json']);
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/ECONNREFUSED|connect/);
    expect(result.stderr).toMatch(/Try: /);
    expect(jsonLines(result.stdout)[0]).toMatchObject({ ok: false, error: { exitCode: 4 } });
  });

  it('exits 4 with a hint when a writing command meets a store that another process writes; info names the writer', async () => {
    const { url, dir } = await populatedFileStore();
    const { fileStore } = await import('@sessionfold/store-file');
    const writer = await fileStore({ directory: dir });
    try {
      const info = JSON.parse((await run(['info', '--json', '-s', url])).stdout) as { status: unknown };
      expect(info.status).toMatchObject({ kind: 'file', details: { lockHolderPid: process.pid, readOnly: true } });
      // Beside the running writer, every command that only looks works.
      for (const args of [['list'], ['streams'], ['tail'], ['verify'], ['export'], ['compact', '--all', '--dry-run']]) {
        expect((await run([...args, '-s', url])).code, args.join(' ')).toBe(0);
      }
      const result = await run(['compact', '--all', '-s', url]);
      expect(result.code).toBe(4);
      expect(result.stderr).toMatch(/Try: /);
    } finally {
      await writer.close();
    }
  });
});

describe.each([
  ['file', populatedFileStore],
  ['sqlite', populatedSqliteStore],
] as const)('the read-only commands on a %s store', (kind, populated) => {
  it('report what the store holds, as JSON', async () => {
    const store = await populated();
    const s = ['-s', store.url, '--json'];
    const info = JSON.parse((await run(['info', ...s])).stdout) as Record<string, unknown>;
    expect(info).toMatchObject({ kind, sessions: 1, streams: 3 });
    expect(info['headPosition']).toBeGreaterThan(0);
    expect(info['sizeOnDisk']).toBeGreaterThan(0);

    const list = JSON.parse((await run(['list', ...s])).stdout) as { sessions: unknown[]; receipts: unknown[] };
    expect(list.sessions).toEqual([expect.objectContaining({ id: store.sessionId, phase: 'active', version: 1, openCommands: 2 })]);
    expect(list.receipts).toEqual([expect.objectContaining({ sessionObjectId: store.completedObjectId })]);
    expect(JSON.parse((await run(['list', '--phase', 'ingress_failed', ...s])).stdout)).toEqual({ sessions: [], receipts: [] });

    const show = await run(['show', store.sessionId, ...s]);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ id: store.sessionId, phase: 'active', version: 1 });
    expect(JSON.parse((await run(['show', store.completedObjectId, ...s])).stdout)).toMatchObject({ phase: 'complete' });

    const replay = jsonLines((await run(['replay', store.sessionId, '--events', ...s])).stdout) as { kind: string; revision: number; record?: unknown }[];
    expect(replay.filter((line) => line.kind === 'event').map((line) => line.revision)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(replay.at(-1)).toMatchObject({ kind: 'result', revision: 6, record: { id: store.sessionId } });
    const early = jsonLines((await run(['replay', store.sessionId, '--to-revision', '2', ...s])).stdout);
    expect(early).toEqual([expect.objectContaining({ kind: 'result', revision: 2 })]);

    const streams = jsonLines((await run(['streams', '--prefix', 'session-', ...s])).stdout);
    expect(streams).toEqual([{ stream: `session-${store.sessionId}`, revision: 6 }]);

    const read = jsonLines((await run(['read', `session-${store.sessionId}`, '--from-revision', '5', ...s])).stdout) as { revision: number }[];
    expect(read.map((event) => event.revision)).toEqual([5, 6]);

    const all = jsonLines((await run(['tail', ...s])).stdout) as { position: number }[];
    expect(all.length).toBeGreaterThan(6);
    const last = jsonLines((await run(['tail', '-n', '2', ...s])).stdout);
    expect(last).toEqual(all.slice(-2));
    expect(jsonLines((await run(['tail', '--from', 'end', ...s])).stdout)).toEqual([]);
    const from = all[3]?.position as number;
    expect(jsonLines((await run(['tail', '--from', String(from), ...s])).stdout)).toEqual(all.slice(3));
  });

  it('take the store from SESSIONFOLD_STORE when --store is not given', async () => {
    const store = await populated();
    const info = await run(['info', '--json'], { env: { SESSIONFOLD_STORE: store.url } });
    expect(info.code).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ kind, sessions: 1 });
  });

  it('print tables for people without --json', async () => {
    const store = await populated();
    const list = await run(['list', '-s', store.url]);
    expect(list.stdout).toMatch(/^ID\s+PHASE\s+VERSION\s+UPDATED\s+OPEN COMMANDS/);
    expect(list.stdout).toContain(store.sessionId);
    expect((await run(['info', '-s', store.url])).stdout).toMatch(/sessions\s+1/);
  });

  it('leave every data file byte-identical', async () => {
    const store = await populated();
    const before = fileDigests(store.dir);
    const s = ['-s', store.url];
    for (const args of [
      ['info'],
      ['list'],
      ['show', store.sessionId],
      ['replay', store.sessionId, '--events'],
      ['streams'],
      ['read', `session-${store.sessionId}`],
      ['tail'],
      ['verify'],
      ['export'],
      ['compact', '--all', '--dry-run'],
      ['delete', store.sessionId, '--dry-run'],
    ]) {
      const result = await run([...args, ...s]);
      expect(result.code, args.join(' ')).toBe(0);
    }
    expect(fileDigests(store.dir)).toEqual(before);
  });
});

describe.each([
  ['file', populatedFileStore],
  ['sqlite', populatedSqliteStore],
] as const)('the read-only commands on a %s store whose completed session was kept (the default completion)', (_kind, populated) => {
  it('list it under its session id with its type and last activity, show it by its id or its session object id, and replay it', async () => {
    const store = await populated('keep');
    const s = ['-s', store.url, '--json'];
    const list = JSON.parse((await run(['list', ...s])).stdout) as { sessions: unknown[]; receipts: unknown[] };
    expect(list.sessions).toContainEqual(
      expect.objectContaining({ id: store.completedId, phase: 'complete', openCommands: 0, sessionType: 'conversation', lastActivityAt: expect.any(String) }),
    );
    expect(list.receipts).toEqual([]);
    const table = (await run(['list', '--phase', 'complete', '-s', store.url])).stdout;
    expect(table).toMatch(/^ID\s+PHASE\s+VERSION\s+UPDATED\s+OPEN COMMANDS\s+TYPE\s+LAST ACTIVITY/);
    expect(table).toMatch(new RegExp(`${store.completedId}\\s+complete\\s+2\\s+\\S+\\s+0\\s+conversation`));

    const shown = JSON.parse((await run(['show', store.completedId, ...s])).stdout) as { phase: string; state: { transcript: { content: string }[] } };
    expect(shown).toMatchObject({ id: store.completedId, phase: 'complete' });
    expect(shown.state.transcript.map((line) => line.content)).toEqual(['done soon']);
    expect(JSON.parse((await run(['show', store.completedObjectId, ...s])).stdout)).toEqual(shown);

    const replay = jsonLines((await run(['replay', store.completedId, ...s])).stdout);
    expect(replay.at(-1)).toMatchObject({ kind: 'result', record: { id: store.completedId, phase: 'complete' } });
  });
});

describe('replay of a compacted session', () => {
  it('says the events below the snapshot were compacted and stops with exit 1', async () => {
    const store = await populatedFileStore();
    expect((await run(['compact', store.sessionId, '-s', store.url])).code).toBe(0);
    const result = await run(['replay', store.sessionId, '--to-revision', '2', '-s', store.url]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/compacted/);
    const full = jsonLines((await run(['replay', store.sessionId, '--events', '--json', '-s', store.url])).stdout);
    expect(full[0]).toMatchObject({ kind: 'snapshot', revision: 6 });
    expect(existsSync(store.dir)).toBe(true);
  });
});
