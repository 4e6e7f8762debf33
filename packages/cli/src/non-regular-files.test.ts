import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { describe, expect, it } from 'vitest';
import { BIN, freshDir, HANG, mkfifo, populatedFileStore, run } from './test-support.fixture.js';

describe('import and export with files that are not regular files', () => {
  it('import refuses a FIFO (exit 2) without waiting for a writer', async () => {
    const dir = freshDir();
    const fifo = join(dir, 'backup.jsonl');
    mkfifo(fifo);
    const ran = await run(['import', fifo, '-s', `file:${join(dir, 'data')}`], HANG);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain(`${fifo} is a FIFO (named pipe)`);
  });

  it('export --out never writes through a link, even one that leads nowhere', async () => {
    const store = await populatedFileStore();
    const dir = freshDir();
    const link = join(dir, 'backup.jsonl');
    symlinkSync(join(dir, 'elsewhere.jsonl'), link);
    const ran = await run(['export', '--out', link, '-s', store.url], HANG);
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/exists; export never overwrites a file/);
    expect(existsSync(join(dir, 'elsewhere.jsonl'))).toBe(false);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });
});

describe('verify and files that are not regular files', () => {
  it('names a FIFO and a link among a file store’s files without opening them', async () => {
    const store = await populatedFileStore();
    const blobs = join(store.dir, 'blobs');
    mkdirSync(blobs, { recursive: true });
    mkfifo(join(blobs, 'f'.repeat(64)));
    symlinkSync('/dev/zero', join(blobs, 'e'.repeat(64)));
    const ran = await run(['verify', '--json', '-s', store.url], HANG);
    expect(ran.code, ran.stderr).toBe(1);
    const report = JSON.parse(ran.stdout) as { problems: { severity: string; file: string; message: string }[] };
    expect(report.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', file: join('blobs', 'f'.repeat(64)), message: expect.stringMatching(/FIFO/) }),
    );
    expect(report.problems).toContainEqual(
      expect.objectContaining({ severity: 'error', file: join('blobs', 'e'.repeat(64)), message: expect.stringMatching(/symbolic link/) }),
    );
    expect(readdirSync(blobs).length).toBeGreaterThanOrEqual(2);
  });
});

/** A SQLite store of one stream of megabytes: far more than a pipe and both processes' buffers hold. */
async function oneLongStream(): Promise<string> {
  const path = join(freshDir(), 'sessions.db');
  const store = await sqliteStore({ path });
  try {
    const text = 'x'.repeat(10_000);
    for (let batch = 0; batch < 10; batch++) {
      const events = Array.from({ length: 100 }, (_, index) => ({ type: 'Noted', data: { index, text } }));
      await store.append('notes-1', events, { expectedRevision: batch === 0 ? 'no_stream' : batch * 100 });
    }
  } finally {
    await store.close();
  }
  return `sqlite:${path}`;
}

/**
 * Starts the CLI with stdout into a pipe that is read once and never again, so the command is stuck writing (and,
 * on one long stream, never reaches a point where it would stop of its own accord); then sends SIGTERM and resolves
 * with how the process ended. A process still there after 20 s is killed, which fails the test.
 */
async function terminateWhileStuck(args: readonly string[]): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  await new Promise<void>((resolve) => child.stdout.once('data', () => (child.stdout.pause(), resolve())));
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  child.kill('SIGTERM');
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (...args) => resolve(args)));
  clearTimeout(killer);
  return { code, signal, stderr };
}

describe('signals', () => {
  it.each([
    ['export', ['export']],
    ['tail', ['tail']],
  ])('a SIGTERM ends %s while its reader has stopped reading (exit 130)', async (_, args) => {
    const ended = await terminateWhileStuck([...args, '-s', await oneLongStream()]);
    expect(ended.signal, ended.stderr).toBeNull();
    expect(ended.code, ended.stderr).toBe(130);
    expect(ended.stderr).toMatch(/interrupted/);
  });
});
