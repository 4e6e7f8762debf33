import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSessionHistory } from '@sessionfold/core';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { describe, expect, it } from 'vitest';
import { freshDir, jsonLines, populatedFileStore, populatedSqliteStore, run } from './test-support.fixture.js';

/** Every stream's events (type, data, revision) and snapshot as `read` prints them, with store-given fields left out. */
async function contents(url: string): Promise<unknown[]> {
  const streams = jsonLines((await run(['streams', '--json', '-s', url])).stdout) as { stream: string }[];
  const all: unknown[] = [];
  for (const { stream } of streams) {
    const events = jsonLines((await run(['read', stream, '--json', '-s', url])).stdout) as Record<string, unknown>[];
    all.push(stream, ...events.map(({ position: _p, recordedAt: _r, ...rest }) => rest));
  }
  return all;
}

describe('copy', () => {
  it('copies file → sqlite → file to identical contents; again copies nothing', async () => {
    const source = await populatedFileStore();
    const dir = freshDir();
    const sqlite = `sqlite:${join(dir, 'copy.db')}`;
    const back = `file:${join(dir, 'back')}`;
    const first = await run(['copy', source.url, sqlite, '--json']);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ streams: 3, blobs: 1, identical: true, mismatches: [] });
    expect((await run(['copy', sqlite, back])).code).toBe(0);
    expect(await contents(back)).toEqual(await contents(source.url));
    expect(readdirSync(join(dir, 'back', 'blobs'))).toEqual([source.blob]);

    const again = await run(['copy', source.url, sqlite, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ events: 0, blobs: 0, unchanged: 3, identical: true });
  });

  it('refuses a destination that diverged, with exit 1', async () => {
    const source = await populatedFileStore();
    const dir = freshDir();
    const path = join(dir, 'other.db');
    const other = await sqliteStore({ path });
    await other.append(`session-${source.sessionId}`, [{ type: 'SomethingElse', data: {} }], { expectedRevision: 'no_stream' });
    await other.close();
    const result = await run(['copy', source.url, `sqlite:${path}`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/diverged/);
  });
});

describe('export and import', () => {
  it('carry every stream, snapshot and blob through one JSON-lines file', async () => {
    const source = await populatedSqliteStore();
    expect((await run(['compact', source.sessionId, '-s', source.url])).code).toBe(0);
    const dir = freshDir();
    const file = join(dir, 'backup.jsonl');
    const exported = await run(['export', '--out', file, '--json', '-s', source.url]);
    expect(exported.code).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({ streams: 3, blobs: 1 });
    const lines = jsonLines(readFileSync(file, 'utf8')) as { kind: string }[];
    expect(lines[0]).toMatchObject({ kind: 'header', format: 'sessionfold.export' });
    expect(lines.some((line) => line.kind === 'snapshot')).toBe(true);
    expect(lines.at(-1)).toMatchObject({ kind: 'end', streams: 3, blobs: 1 });
    expect((await run(['export', '--out', file, '-s', source.url])).code).toBe(1);

    const target = `file:${join(dir, 'restored')}`;
    const dry = await run(['import', file, '--dry-run', '--json', '-s', target]);
    expect(dry.code).toBe(0);
    expect(existsSync(join(dir, 'restored'))).toBe(false);
    expect((await run(['import', file, '-s', target])).code).toBe(0);
    expect(await contents(target)).toEqual(await contents(source.url));
    const show = JSON.parse((await run(['show', source.sessionId, '--json', '-s', target])).stdout) as { id: string };
    expect(show.id).toBe(source.sessionId);
  });

  it('keep each event’s schema version (written only when it is not 1)', async () => {
    const path = join(freshDir(), 'versions.db');
    const store = await sqliteStore({ path });
    try {
      await store.append(
        'notes-versions',
        [
          { type: 'Noted', data: { n: 1 } },
          { type: 'Noted', data: { n: 2 }, schemaVersion: 3 },
        ],
        { expectedRevision: 'no_stream' },
      );
    } finally {
      await store.close();
    }
    const file = join(freshDir(), 'backup.jsonl');
    expect((await run(['export', '--out', file, '-s', `sqlite:${path}`])).code).toBe(0);
    const events = (jsonLines(readFileSync(file, 'utf8')) as { kind: string }[]).filter((line) => line.kind === 'event');
    expect(events).toEqual([
      { kind: 'event', stream: 'notes-versions', revision: 1, type: 'Noted', data: { n: 1 } },
      { kind: 'event', stream: 'notes-versions', revision: 2, type: 'Noted', data: { n: 2 }, schemaVersion: 3 },
    ]);
    const dir = join(freshDir(), 'restored');
    expect((await run(['import', file, '-s', `file:${dir}`])).code).toBe(0);
    const restored = await fileStore({ directory: dir, readOnly: true });
    try {
      const versions: number[] = [];
      for await (const event of (await restored.read('notes-versions')).events) versions.push(event.schemaVersion);
      expect(versions).toEqual([1, 3]);
    } finally {
      await restored.close();
    }
  });

  it('asks for --yes before importing into a store that holds streams, and refuses streams it has', async () => {
    const source = await populatedFileStore();
    const file = join(freshDir(), 'backup.jsonl');
    writeFileSync(file, (await run(['export', '-s', source.url])).stdout);
    const other = await populatedSqliteStore();
    const clash = await run(['import', file, '--yes', '-s', other.url]);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toMatch(/already exist/);

    const unrelated = join(freshDir(), 'u.db');
    const store = await sqliteStore({ path: unrelated });
    await store.append('notes', [{ type: 'Noted', data: {} }], { expectedRevision: 'no_stream' });
    await store.close();
    const refused = await run(['import', file, '-s', `sqlite:${unrelated}`]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/--yes/);
    expect((await run(['import', file, '--yes', '-s', `sqlite:${unrelated}`])).code).toBe(0);
  });

  it('refuses a damaged file before writing anything, and a missing one with exit 3', async () => {
    const source = await populatedFileStore();
    const dir = freshDir();
    const file = join(dir, 'backup.jsonl');
    const text = (await run(['export', '-s', source.url])).stdout.split('\n');
    writeFileSync(file, text.slice(0, -3).join('\n'));
    const target = join(dir, 'target.db');
    const result = await run(['import', file, '-s', `sqlite:${target}`]);
    expect(result.code).toBe(1);
    expect(existsSync(target)).toBe(false);
    expect((await run(['import', join(dir, 'nope.jsonl'), '-s', `sqlite:${target}`])).code).toBe(3);
  });
});

describe('compact', () => {
  it('prints the events it would drop with --dry-run, then drops them; the record stays the same', async () => {
    const store = await populatedFileStore();
    const before = JSON.parse((await run(['show', store.sessionId, '--json', '-s', store.url])).stdout) as unknown;
    const dry = JSON.parse((await run(['compact', '--all', '--dry-run', '--json', '-s', store.url])).stdout) as { eventsDropped: number };
    expect(dry.eventsDropped).toBeGreaterThan(6);
    const done = await run(['compact', '--all', '--json', '-s', store.url]);
    expect(done.code).toBe(0);
    const report = JSON.parse(done.stdout) as { eventsDropped: number; bytesSaved: number };
    expect(report.eventsDropped).toBe(dry.eventsDropped);
    expect(typeof report.bytesSaved).toBe('number');
    expect(JSON.parse((await run(['show', store.sessionId, '--json', '-s', store.url])).stdout)).toEqual(before);
    expect(JSON.parse((await run(['compact', '--all', '--json', '-s', store.url])).stdout)).toMatchObject({ eventsDropped: 0 });
  });

  it('needs one session or --all (exit 2) and an existing session (exit 3)', async () => {
    const store = await populatedFileStore();
    expect((await run(['compact', '-s', store.url])).code).toBe(2);
    expect((await run(['compact', '00000000-0000-4000-8000-000000000000', '-s', store.url])).code).toBe(3);
  });
});

describe('delete', () => {
  it('erases a session and the blobs only it owns; --dry-run only says so', async () => {
    const store = await populatedSqliteStore();
    const dry = JSON.parse((await run(['delete', store.sessionId, '--dry-run', '--json', '-s', store.url])).stdout) as {
      blobsRemoved: string[];
      events: number;
    };
    expect(dry).toMatchObject({ blobsRemoved: [store.blob], events: 6 });
    expect((await run(['show', store.sessionId, '-s', store.url])).code).toBe(0);
    const done = await run(['delete', store.sessionId, '-s', store.url]);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain(store.blob);
    expect((await run(['show', store.sessionId, '-s', store.url])).code).toBe(3);
    expect((await run(['delete', store.sessionId, '-s', store.url])).code).toBe(3);
  });

  it('never lets the erased session’s start key hand out its id again', async () => {
    const store = await populatedSqliteStore();
    expect((await run(['delete', store.sessionId, '-s', store.url])).code).toBe(0);
    const opened = await sqliteStore({ path: store.path });
    try {
      const history = await openSessionHistory({ store: opened });
      const again = await history.start({ idempotencyId: 'start-1', startedAt: '2026-07-24T00:00:00Z', sessionType: 'conversation' });
      expect(again.created).toBe(true);
      expect(again.value.id).not.toBe(store.sessionId);
      await history.close();
    } finally {
      await opened.close();
    }
  });
});
