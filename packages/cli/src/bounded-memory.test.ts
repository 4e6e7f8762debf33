import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { EventStore, NewEvent } from '@sessionfold/core/kernel';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { describe, expect, it } from 'vitest';
import { BIN, freshDir, populatedSqliteStore } from './test-support.fixture.js';

/**
 * A heap this small holds the CLI and a page of events with room to spare, but not a store of about 100 MB
 * (nor its largest stream, half of it): a command
 * that gathered every event, or all its output, before writing would run out of memory and exit non-zero.
 */
const SMALL_HEAP = '--max-old-space-size=40';
const EVENTS = 120_000;
const TEXT = 'x'.repeat(800);

/** Runs the built CLI with a small heap; counts stdout's lines as they come instead of keeping them. */
function runWithSmallHeap(args: readonly string[]): Promise<{ code: number | null; lines: number; last: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: SMALL_HEAP };
  delete env['SESSIONFOLD_STORE'];
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let lines = 0;
  let tail = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    for (let index = chunk.indexOf(0x0a); index >= 0; index = chunk.indexOf(0x0a, index + 1)) lines++;
    tail = (tail + chunk.toString('utf8')).slice(-4096);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4096);
  });
  return new Promise((resolve) => {
    child.once('close', (code) => resolve({ code, lines, last: tail.trimEnd().split('\n').at(-1) ?? '', stderr }));
  });
}

/** Appends `count` events of about a kilobyte to `stream`, a thousand per call. */
async function fill(store: EventStore, stream: string, count: number, event: (index: number) => NewEvent): Promise<void> {
  for (let from = 0; from < count; from += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - from) }, (_, offset) => event(from + offset));
    await store.append(stream, batch, { expectedRevision: 'any' });
  }
}

const noted = (index: number) => ({ type: 'Noted', data: { index, text: TEXT } });

describe('streaming commands in bounded memory', () => {
  it.each(['file', 'sqlite'] as const)('read, tail, export and verify a %s store of tens of megabytes with a 40 MB heap', async (kind) => {
    const dir = freshDir();
    const location = kind === 'file' ? join(dir, 'data') : join(dir, 'sessions.db');
    const store = kind === 'file' ? await fileStore({ directory: location }) : await sqliteStore({ path: location });
    try {
      await fill(store, 'big', EVENTS / 2, noted);
      for (let stream = 0; stream < 10; stream++) await fill(store, `small-${stream}`, EVENTS / 20, noted);
    } finally {
      await store.close();
    }
    const url = `${kind}:${location}`;
    const read = await runWithSmallHeap(['read', 'big', '-s', url]);
    expect(read, read.stderr).toMatchObject({ code: 0, lines: EVENTS / 2 });
    const tail = await runWithSmallHeap(['tail', '-s', url]);
    expect(tail, tail.stderr).toMatchObject({ code: 0, lines: EVENTS });
    const exported = await runWithSmallHeap(['export', '-s', url]);
    expect(exported, exported.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(exported.last)).toMatchObject({ kind: 'end', streams: 11, events: EVENTS });
    const verified = await runWithSmallHeap(['verify', '--json', '-s', url]);
    expect(verified, verified.stderr).toMatchObject({ code: 0 });
  });

  it('replay holds only the folded record and prints it once, at the end', async () => {
    const populated = await populatedSqliteStore();
    const stream = `session-${populated.sessionId}`;
    const store = await sqliteStore({ path: populated.path });
    let revision: number;
    try {
      // Checkpoints replace the control state: the record stays small however many are folded.
      await fill(store, stream, EVENTS, (index) => ({
        type: 'SessionCheckpointed',
        data: { at: '2026-07-23T00:00:01Z', state: { note: `${index}${TEXT}` }, userActivity: false },
      }));
      revision = (await store.read(stream)).revision;
    } finally {
      await store.close();
    }
    const replayed = await runWithSmallHeap(['replay', populated.sessionId, '--json', '-s', populated.url]);
    expect(replayed, replayed.stderr).toMatchObject({ code: 0, lines: 1 });
    expect(JSON.parse(replayed.last)).toMatchObject({ kind: 'result', revision, record: { id: populated.sessionId } });
  });
});
