import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freshDir, populatedFileStore, populatedSqliteStore, run, start } from './test-support.fixture.js';

/**
 * Every stdout line of `child` from its start, with a wait for the first one that satisfies `match`. One listener
 * gathers from the start: a line printed while the test awaits something else is kept, not dropped by a stream
 * already flowing.
 */
function collectLines(child: ChildProcess): { waitFor(match: (line: string) => boolean, ms: number): Promise<string> } {
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let partial = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts.filter((line) => line !== ''));
    for (const waiter of [...waiters]) waiter();
  });
  return {
    waitFor(match, ms) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found === undefined) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching line within ${ms} ms; saw: ${lines.join('\n')}${partial}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
  };
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Appends one event to `stream` from a separate process, as another application would. */
function appendFromAnotherProcess(kind: 'file' | 'sqlite', location: string, stream: string): Promise<void> {
  const storeModule = kind === 'file' ? '@sessionfold/store-file' : '@sessionfold/store-sqlite';
  const open = kind === 'file' ? `await m.fileStore({ directory: ${JSON.stringify(location)} })` : `await m.sqliteStore({ path: ${JSON.stringify(location)} })`;
  const script = `const m = await import(${JSON.stringify(storeModule)}); const s = ${open}; await s.append(${JSON.stringify(stream)}, [{ type: 'Noted', data: { by: 'other' } }], { expectedRevision: 'any' }); await s.close();`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], { cwd: join(import.meta.dirname, '..') }, (error) => (error ? reject(error) : resolve()));
  });
}

describe.each([
  ['file', populatedFileStore, (store: { dir: string }) => store.dir],
  ['sqlite', populatedSqliteStore, (store: { path: string }) => store.path],
] as const)('tail --follow on a %s store', (kind, populated, locationOf) => {
  it("prints another process's append within a second and exits 0 on SIGINT", async () => {
    const store = await populated();
    // `-n 1` prints the feed's last change once the follower has reached the end, so the append below is made
    // only once it follows (a fixed wait raced with a slow start under load).
    const child = start(['tail', '--follow', '-n', '1', '--json', '-s', store.url]);
    const lines = collectLines(child);
    try {
      await lines.waitFor(() => true, 30_000);
      const stream = `notes-${randomUUID()}`;
      await appendFromAnotherProcess(kind, locationOf(store as never), stream);
      const appendedAt = Date.now();
      const line = await lines.waitFor((text) => text.includes(stream), 5000);
      expect(Date.now() - appendedAt).toBeLessThan(1000);
      expect(JSON.parse(line)).toMatchObject({ streamId: stream, type: 'Noted', data: { by: 'other' } });
      const exited = exitOf(child);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

describe('tail --follow on an existing directory no writer has opened yet', () => {
  it("reads it as an empty store, creates nothing, and prints the first writer's change", async () => {
    const dir = freshDir();
    const info = await run(['info', '--json', '-s', dir]);
    expect(info.code).toBe(0);
    expect(JSON.parse(info.stdout)).toMatchObject({ streams: 0, events: 0 });
    expect(readdirSync(dir)).toEqual([]);
    // From the start of the feed (the default), so an append made before the follower is ready is printed too.
    const child = start(['tail', '--follow', '--json', '-s', dir]);
    const lines = collectLines(child);
    try {
      const stream = `first-${randomUUID()}`;
      await appendFromAnotherProcess('file', dir, stream);
      expect(JSON.parse(await lines.waitFor((text) => text.includes(stream), 15_000))).toMatchObject({ streamId: stream, type: 'Noted' });
      const exited = exitOf(child);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
