import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSessionHistory, type SessionHistory } from '@sessionfold/core';
import type { EventStore } from '@sessionfold/core/kernel';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { afterEach } from 'vitest';

/** The committed bin shim, which loads the built command. */
export const BIN = fileURLToPath(new URL('../bin/sessionfold.mjs', import.meta.url));

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary directory, removed after the test. */
export function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sessionfold-cli-'));
  dirs.push(dir);
  return dir;
}

/** What a finished CLI process left. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built CLI with `args` to its end, with SESSIONFOLD_STORE unset unless `env` sets it; with `timeoutMs`, a
 * run that has not ended by then is killed (SIGKILL), so a command that hangs fails its test instead of outliving it.
 */
export function run(args: readonly string[], options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {}): Promise<Ran> {
  const env = { ...process.env, ...options.env };
  if (!options.env?.['SESSIONFOLD_STORE']) delete env['SESSIONFOLD_STORE'];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env, cwd: options.cwd, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 0, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        const code = error && typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : error ? 1 : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * For a run that meets files that are not what they seem (a FIFO read waits for a writer forever, /dev/zero never
 * ends): killed after a while, so a command that hangs fails its test instead of hanging the suite.
 */
export const HANG = { timeoutMs: 20_000 };

/** Makes a FIFO (named pipe) at `path`. */
export function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
}

/** Starts the CLI and leaves it running (for --follow). */
export function start(args: readonly string[]): ChildProcess {
  const env = { ...process.env };
  delete env['SESSIONFOLD_STORE'];
  return spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Parses JSON-lines output. */
export function jsonLines(text: string): unknown[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as unknown);
}

/** Every file below `dir` with the sha256 of its bytes; SQLite's own -wal/-shm side files are left out. */
export function fileDigests(dir: string): Record<string, string> {
  const digests: Record<string, string> = {};
  const walk = (current: string) => {
    for (const name of readdirSync(current)) {
      const path = join(current, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (!/-(wal|shm)$/.test(name)) digests[relative(dir, path)] = createHash('sha256').update(readFileSync(path)).digest('hex');
    }
  };
  walk(dir);
  return digests;
}

/** What `populate` made. */
export interface Populated {
  sessionId: string;
  /** The completed session's id (its stream is deleted under the archive policy). */
  completedId: string;
  completedObjectId: string;
  blob: string;
}

/**
 * Fills a store through the service: one active session with a transcript, two commands (one claimed), a
 * blob, and one completed session. Under the archive policy (the default here) the completed session is a receipt
 * in the catalog, and there are three streams: the active session, the catalog and the start-key stream the
 * completion released; under `completion: 'keep'` the completed session's stream stays as well.
 */
export async function populate(store: EventStore, completion: 'keep' | 'archive-and-delete' = 'archive-and-delete'): Promise<Populated> {
  const history: SessionHistory = await openSessionHistory({ store, completion });
  try {
    const started = await history.start({ idempotencyId: 'start-1', startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' });
    const id = started.value.id;
    const first = await history.enqueue(id, { idempotencyId: 'c-1', kind: 'message', payload: { text: 'hello' } });
    await history.enqueue(id, { idempotencyId: 'c-2', kind: 'message', payload: { text: 'again' } });
    await history.claimCommand(first.value.id);
    await history.appendTranscript(id, { role: 'user-message', text: 'hello' });
    await history.appendTranscript(id, { role: 'assistant-message', text: 'hi there' });
    const blob = await store.putBlob(`session-${id}`, new TextEncoder().encode('object bytes'));
    const done = await history.start({ idempotencyId: 'start-2', startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' });
    await history.appendTranscript(done.value.id, { role: 'user-message', text: 'done soon' });
    await history.complete(done.value.id, { expectedVersion: done.value.version, state: { ...done.value.state, sessionObjectId: 'A1234567' } });
    return { sessionId: id, completedId: done.value.id, completedObjectId: 'A1234567', blob };
  } finally {
    await history.close();
  }
}

/** A populated file store in a fresh directory; returns its directory and what is in it. */
export async function populatedFileStore(completion: 'keep' | 'archive-and-delete' = 'archive-and-delete'): Promise<Populated & { dir: string; url: string }> {
  const dir = join(freshDir(), 'data');
  const store = await fileStore({ directory: dir });
  try {
    return { ...(await populate(store, completion)), dir, url: `file:${dir}` };
  } finally {
    await store.close();
  }
}

/** A populated SQLite store in a fresh directory. */
export async function populatedSqliteStore(
  completion: 'keep' | 'archive-and-delete' = 'archive-and-delete',
): Promise<Populated & { dir: string; path: string; url: string }> {
  const dir = freshDir();
  const path = join(dir, 'sessions.db');
  const store = await sqliteStore({ path });
  try {
    return { ...(await populate(store, completion)), dir, path, url: `sqlite:${path}` };
  } finally {
    await store.close();
  }
}
