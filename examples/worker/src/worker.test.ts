import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { dropSchema, freshSchema, type Backend } from './backend.js';
import { liveLeaseOverlaps, outcomeProblems, takeoverOf } from './checks.js';
import { runFleet, type FleetRun } from './fleet.js';

const PG_URL = process.env.SESSIONFOLD_PG_URL;
const packageDir = fileURLToPath(new URL('..', import.meta.url));

describe('the worker fleet', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sessionfold-worker-test-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };

  function expectEveryPromiseKept(run: FleetRun): void {
    // Exactly one recorded outcome per command, counted in the store's events.
    expect(run.commands).toHaveLength(12);
    expect(outcomeProblems(run)).toEqual([]);
    // No start by another worker before the lease of the start before it had run out.
    expect(liveLeaseOverlaps(run.journal)).toEqual([]);
    // The killed worker started its command and never finished it; another worker took it over after its lease.
    const journalOfKilled = run.journal.filter((entry) => entry.command === run.killedCommand);
    expect(journalOfKilled[0]).toMatchObject({ event: 'started', worker: run.killed });
    expect(journalOfKilled).not.toContainEqual(expect.objectContaining({ event: 'finished', worker: run.killed }));
    const takeover = takeoverOf(run);
    expect(takeover.by).toBeDefined();
    expect(takeover.by).not.toBe(run.killed);
    expect(takeover.afterLease).toBe(true);
    expect(run.outcomes.get(run.killedCommand)).toEqual([expect.objectContaining({ ranBy: takeover.by })]);
    // Only the killed worker may have left a command unfinished; the others ran theirs to the end.
    expect(run.journal.filter((entry) => entry.event === 'started' && entry.worker !== run.killed)).toHaveLength(
      run.journal.filter((entry) => entry.event === 'finished' || entry.event === 'lost').length,
    );
    expect(run.exitCodes).toEqual([0, 0]);
  }

  it('over one SQLite file: a worker killed mid-command, every command completed once, no live lease shared', async () => {
    const dir = freshDir();
    const run = await runFleet({ kind: 'sqlite', path: join(dir, 'sessions.db') }, dir);
    expectEveryPromiseKept(run);
  });

  it('over PostgreSQL (SESSIONFOLD_PG_URL): the same promises in a fresh schema', { tags: ['postgres'] }, async () => {
    const dir = freshDir();
    const backend: Backend = { kind: 'postgres', url: PG_URL as string, schema: freshSchema() };
    cleanups.push(() => dropSchema(backend.url, backend.schema));
    expectEveryPromiseKept(await runFleet(backend, dir));
  });

  it('prints what its README says it prints', async () => {
    const env = { ...process.env };
    delete env.SESSIONFOLD_PG_URL;
    const child = spawn(process.execPath, ['--conditions=sessionfold-source', '--import', 'tsx', 'src/main.ts'], { cwd: packageDir, env });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
    const printed = /## What it prints\n\n```text\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(stdout).toBe(printed);
    expect(code).toBe(0);
  });
});
