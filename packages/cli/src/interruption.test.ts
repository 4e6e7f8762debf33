import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { describe, expect, it } from 'vitest';
import { BIN, freshDir, jsonLines } from './test-support.fixture.js';

const STREAMS = 400;

/** A SQLite store of many streams: its export is far larger than a pipe holds. */
async function manyStreams(): Promise<string> {
  const path = join(freshDir(), 'sessions.db');
  const store = await sqliteStore({ path });
  try {
    const text = 'x'.repeat(500);
    for (let stream = 0; stream < STREAMS; stream++) {
      const events = Array.from({ length: 10 }, (_, index) => ({ type: 'Noted', data: { index, text } }));
      await store.append(`notes-${stream}`, events, { expectedRevision: 'no_stream' });
    }
  } finally {
    await store.close();
  }
  return `sqlite:${path}`;
}

describe('Ctrl-C during export', () => {
  it('stops between two streams with exit 130, a message, and no end line', async () => {
    const url = await manyStreams();
    const child = spawn(process.execPath, [BIN, 'export', '-s', url], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    // Not reading stdout after the first chunk fills the pipe, so the export is mid-way when Ctrl-C arrives.
    await new Promise<void>((resolve) => child.stdout.once('data', (chunk: Buffer) => (chunks.push(chunk), child.stdout.pause(), resolve())));
    child.kill('SIGINT');
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code, stderr).toBe(130);
    expect(stderr).toMatch(/interrupted: stopped after \d+ stream\(s\)/);
    const lines = jsonLines(Buffer.concat(chunks).toString('utf8')) as { kind: string }[];
    expect(lines[0]).toMatchObject({ kind: 'header' });
    expect(lines.some((line) => line.kind === 'end')).toBe(false);
    expect(lines.filter((line) => line.kind === 'stream').length).toBeLessThan(STREAMS);
  });

  it('removes the file it was writing with --out', async () => {
    const url = await manyStreams();
    const file = join(freshDir(), 'backup.jsonl');
    const child = spawn(process.execPath, [BIN, 'export', '--out', file, '-s', url], { stdio: ['ignore', 'pipe', 'pipe'] });
    // The file appears once the export has opened the store and begun writing.
    while (!existsSync(file) && child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 5));
    child.kill('SIGINT');
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    if (code === 0) return; // The whole export was written before Ctrl-C arrived: nothing to remove.
    expect(code).toBe(130);
    expect(existsSync(file)).toBe(false);
  });
});
