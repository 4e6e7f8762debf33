import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { populatedFileStore, populatedSqliteStore, start } from './test-support.fixture.js';

/** Resolves with the first stdout line of `child` that satisfies `match`, or rejects after `ms`. */
function waitForLine(child: ChildProcess, match: (line: string) => boolean, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`no matching line within ${ms} ms; saw: ${buffer}`)), ms);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (const line of buffer.split('\n')) {
        if (line !== '' && match(line)) {
          clearTimeout(timer);
          resolve(line);
          return;
        }
      }
    });
  });
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
    const child = start(['tail', '--follow', '--from', 'end', '--json', '-s', store.url]);
    try {
      // Give the follower time to open and reach the end of the feed before the append.
      await new Promise((resolve) => setTimeout(resolve, 700));
      const stream = `notes-${randomUUID()}`;
      await appendFromAnotherProcess(kind, locationOf(store as never), stream);
      const appendedAt = Date.now();
      const line = await waitForLine(child, (text) => text.includes(stream), 5000);
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
