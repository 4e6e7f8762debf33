import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSessionHistory } from '@sessionfold/core';
import type { EventStore } from '@sessionfold/core/kernel';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { describe, expect, it } from 'vitest';
import { BIN, freshDir, run } from './test-support.fixture.js';

const STREAMS = 600;
const EVENTS_PER_STREAM = 4;

/** A SQLite store of many small streams: moving it into a file store costs one write per stream. */
async function manyStreams(): Promise<string> {
  const path = join(freshDir(), 'sessions.db');
  const store = await sqliteStore({ path });
  try {
    for (let stream = 0; stream < STREAMS; stream++) {
      const events = Array.from({ length: EVENTS_PER_STREAM }, (_, index) => ({ type: 'Noted', data: { index } }));
      await store.append(`notes-${stream}`, events, { expectedRevision: 'no_stream' });
    }
  } finally {
    await store.close();
  }
  return path;
}

/** The streams whose events the log of the file store in `dir` holds so far (read as it lies on disk, whole lines only). */
function streamsLogged(dir: string): number {
  const log = join(dir, 'log');
  if (!existsSync(log)) return 0;
  const streams = new Set<string>();
  for (const segment of readdirSync(log).filter((name) => /^\d{20}\.jsonl$/.test(name))) {
    const text = readFileSync(join(log, segment), 'utf8');
    for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
      if (line === '') continue;
      const payload = JSON.parse(line.slice(65)) as { stream?: unknown; position?: unknown };
      if (typeof payload.stream === 'string' && payload.position !== undefined) streams.add(payload.stream);
    }
  }
  return streams.size;
}

/**
 * Runs the CLI, sends Ctrl-C once `begun()` says it is mid-way, and resolves with its exit code and stderr. A
 * command that finished before the signal reached it exits 0; the callers say what that leaves to check.
 */
async function interrupted(args: readonly string[], begun: () => boolean | Promise<boolean>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  while (child.exitCode === null && !(await begun())) await new Promise((resolve) => setTimeout(resolve, 2));
  child.kill('SIGINT');
  return { code: await closed, stderr };
}

/** Every stream of `store` with its events' data, in stream order. */
async function contents(store: EventStore): Promise<Map<string, unknown[]>> {
  const found = new Map<string, unknown[]>();
  for await (const { stream } of store.streams()) {
    const events: unknown[] = [];
    for await (const event of (await store.read(stream)).events) events.push(event.data);
    found.set(stream, events);
  }
  return found;
}

/** Checks that every stream of the file store in `dir` holds all its events: none was cut mid-way. */
async function expectWholeStreams(dir: string): Promise<number> {
  const store = await fileStore({ directory: dir, readOnly: true });
  try {
    const found = await contents(store);
    for (const [stream, events] of found) expect(events, stream).toEqual(Array.from({ length: EVENTS_PER_STREAM }, (_, index) => ({ index })));
    return found.size;
  } finally {
    await store.close();
  }
}

describe('Ctrl-C while moving many streams', () => {
  it('copy stops between streams with exit 130, leaves each copied stream whole, and a second copy finishes the rest', async () => {
    const source = await manyStreams();
    const dir = join(freshDir(), 'copy');
    const first = await interrupted(['copy', `sqlite:${source}`, `file:${dir}`], () => streamsLogged(dir) >= 5);
    if (first.code === 0) console.log('copy finished before Ctrl-C reached it; only the second copy is checked');
    else {
      expect(first.code, first.stderr).toBe(130);
      expect(first.stderr).toMatch(/interrupted: stopped after \d+ of \d+ stream\(s\)/);
      expect(await expectWholeStreams(dir)).toBeLessThan(STREAMS);
    }
    const again = await run(['copy', `sqlite:${source}`, `file:${dir}`, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ identical: true });
    expect(await expectWholeStreams(dir)).toBe(STREAMS);
  });

  it('import stops between streams with exit 130 and leaves each imported stream whole', async () => {
    const source = await manyStreams();
    const file = join(freshDir(), 'backup.jsonl');
    const exported = await run(['export', '--out', file, '-s', `sqlite:${source}`]);
    expect(exported.code, exported.stderr).toBe(0);
    const dir = join(freshDir(), 'imported');
    const result = await interrupted(['import', file, '-s', `file:${dir}`], () => streamsLogged(dir) >= 5);
    if (result.code === 0) {
      console.log('import finished before Ctrl-C reached it; checked as a whole import');
      expect(await expectWholeStreams(dir)).toBe(STREAMS);
      return;
    }
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toMatch(/interrupted: stopped after \d+ of \d+ stream\(s\); each stream imported is whole/);
    expect(await expectWholeStreams(dir)).toBeLessThan(STREAMS);
  });

  it('compact --all stops between streams with exit 130, and every session folds as before', async () => {
    const dir = join(freshDir(), 'sessions');
    const store = await fileStore({ directory: dir });
    const sessions = 300;
    try {
      const history = await openSessionHistory({ store, compaction: false });
      try {
        for (let i = 0; i < sessions; i++) {
          const { value } = await history.start({ idempotencyId: `k-${i}`, startedAt: '2026-01-01T00:00:00.000Z', sessionType: 'job' });
          for (let line = 0; line < 3; line++) await history.appendTranscript(value.id, { role: 'user-message', text: `line ${line}` });
        }
      } finally {
        await history.close();
      }
    } finally {
      await store.close();
    }
    const records = async () => {
      const view = await fileStore({ directory: dir, readOnly: true });
      try {
        const history = await openSessionHistory({ store: view, readOnly: true });
        try {
          return (await history.list()).map((record) => JSON.stringify(record)).sort();
        } finally {
          await history.close();
        }
      } finally {
        await view.close();
      }
    };
    const before = await records();
    expect(before).toHaveLength(sessions);
    // Read through one read-only view, which follows the writer: the sessions with a snapshot so far.
    const view = await fileStore({ directory: dir, readOnly: true });
    const snapshots = async () => {
      let count = 0;
      for await (const { stream } of view.streams({ prefix: 'session-' })) {
        const read = await view.read(stream);
        if (read.snapshot !== undefined) count++;
        for await (const _ of read.events) break;
      }
      return count;
    };
    try {
      expect(await snapshots()).toBe(0);
      const result = await interrupted(['compact', '--all', '-s', `file:${dir}`], async () => (await snapshots()) >= 3);
      if (result.code === 0) console.log('compact --all finished before Ctrl-C reached it; checked as a whole compaction');
      else {
        expect(result.code, result.stderr).toBe(130);
        expect(result.stderr).toMatch(/interrupted: stopped after \d+ compacted stream\(s\) of \d+; each stream is compacted whole or not at all/);
        expect(await snapshots()).toBeLessThan(sessions);
      }
    } finally {
      await view.close();
    }
    expect(await records()).toEqual(before);
  });
});
