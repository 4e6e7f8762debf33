import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { describe, expect, it } from 'vitest';
import { BIN, freshDir, populatedFileStore, run } from './test-support.fixture.js';

// Files that are not what they seem: a FIFO read waits for a writer forever, /dev/zero never ends, a link may lead
// anywhere. Each run is killed after a while, so a command that hangs fails here instead of hanging the suite.
const HANG = { timeoutMs: 20_000 };

const ID = '9078bb6e-0931-4477-9ce9-b1430d0335a2';

function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

function frame(record: unknown): string {
  const payload = JSON.stringify(record);
  return `${createHash('sha256').update(payload).digest('hex')} ${payload}\n`;
}

/** A legacy sessions directory with one good journal. */
function legacyDirectory(): string {
  const sessions = join(freshDir(), 'sessions');
  mkdirSync(sessions);
  const value = {
    id: ID,
    phase: 'active',
    started_at: '2026-07-24T00:00:00Z',
    updated_at: '2026-07-24T00:00:00Z',
    state: {},
    provenance_id: null,
    version: 1,
    last_user_message_at: null,
    ended_at: null,
  };
  writeFileSync(join(sessions, `${ID}.session-control`), frame({ kind: 'session_lifecycle', recordedAt: '2026-07-24T00:00:00Z', value }));
  return sessions;
}

interface LegacySummary {
  sessionsImported: number;
  problems: { severity: string; file: string; message: string }[];
}

describe('import-legacy and files that are not regular files', () => {
  it('names a FIFO, a link to /dev/zero and a directory among the journals, and imports the others', async () => {
    const sessions = legacyDirectory();
    const fifo = '1c3f5a7e-2b4d-4c6e-8f01-23456789abcd.session-control';
    const zero = '5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9.session-control';
    const directory = '6e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9.session-control';
    mkfifo(join(sessions, fifo));
    symlinkSync('/dev/zero', join(sessions, zero));
    mkdirSync(join(sessions, directory));
    const url = `file:${join(freshDir(), 'data')}`;
    const ran = await run(['import-legacy', sessions, '--json', '-s', url], HANG);
    expect(ran.code, ran.stderr).toBe(1);
    const summary = JSON.parse(ran.stdout) as LegacySummary;
    expect(summary.sessionsImported).toBe(1);
    const problemOf = (file: string) => summary.problems.find((problem) => problem.file === file);
    expect(problemOf(fifo)).toMatchObject({ severity: 'error', message: expect.stringMatching(/FIFO.*not a regular file.*not imported/) });
    expect(problemOf(zero)).toMatchObject({ severity: 'error', message: expect.stringMatching(/symbolic link, which is not followed/) });
    expect(problemOf(directory)).toMatchObject({ severity: 'error', message: expect.stringMatching(/is a directory, not a control journal/) });
    expect(ran.stderr).not.toMatch(/EISDIR/);
  });

  it('refuses a FIFO or a link to /dev/zero as the completed list (exit 2, named), and imports nothing', async () => {
    const sessions = legacyDirectory();
    const dir = freshDir();
    const fifo = join(dir, 'fifo.txt');
    mkfifo(fifo);
    const zero = join(dir, 'zero.txt');
    symlinkSync('/dev/zero', zero);
    const target = join(dir, 'data');
    const fromFifo = await run(['import-legacy', sessions, '--completed-list', fifo, '-s', `file:${target}`], HANG);
    expect(fromFifo.code).toBe(2);
    expect(fromFifo.stderr).toContain(`${fifo} is a FIFO (named pipe): not a regular file`);
    const fromZero = await run(['import-legacy', sessions, '--completed-list', zero, '-s', `file:${target}`], HANG);
    expect(fromZero.code).toBe(2);
    expect(fromZero.stderr).toContain(`${zero} is a character device`);
    expect(existsSync(target)).toBe(false);
  });
});

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

describe('signals', () => {
  it('a SIGTERM ends an export whose reader stopped reading (exit 130)', async () => {
    const path = join(freshDir(), 'sessions.db');
    const store = await sqliteStore({ path });
    try {
      // One stream of megabytes: far more than the pipe and both processes' buffers hold, so the export is stuck
      // writing it, and never reaches the end of the stream, where it would stop of its own accord.
      const text = 'x'.repeat(10_000);
      for (let batch = 0; batch < 10; batch++) {
        const events = Array.from({ length: 100 }, (_, index) => ({ type: 'Noted', data: { index, text } }));
        await store.append('notes-1', events, { expectedRevision: batch === 0 ? 'no_stream' : batch * 100 });
      }
    } finally {
      await store.close();
    }
    const child = spawn(process.execPath, [BIN, 'export', '-s', `sqlite:${path}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    // The export fills the pipe and then waits for a reader that never reads again.
    await new Promise<void>((resolve) => child.stdout.once('data', () => (child.stdout.pause(), resolve())));
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.kill('SIGTERM');
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (...args) => resolve(args)));
    clearTimeout(killer);
    expect(signal, stderr).toBeNull();
    expect(code, stderr).toBe(130);
    expect(stderr).toMatch(/interrupted/);
  });
});
