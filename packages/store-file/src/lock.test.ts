import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StorageError, StoreLockedError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { ChildOutput, collect, freshDir, logLines, randomStream, segmentsOf, startChild } from './test-support.fixture.js';

/** The pid of a process that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('the writer lock', () => {
  it('a second writer process gets StoreLockedError naming the holder', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const child = new ChildOutput(startChild('holder', [dir]));
    const line = await child.waitFor((l) => l.startsWith('locked ') || l.startsWith('open ') || l.startsWith('error '));
    expect(line).toBe(`locked ${process.pid}`);
    await child.exited;
    await store.close();
  });

  it('a writer in this process is refused while another process holds the lock, and takes it once that process is killed', async () => {
    const dir = freshDir();
    const child = new ChildOutput(startChild('holder', [dir]));
    await child.waitFor((l) => l.startsWith('open '));
    const refused = await fileStore({ directory: dir }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StoreLockedError);
    expect((refused as StoreLockedError).holderPid).toBe(child.child.pid);
    expect((refused as StoreLockedError).lockFile).toBe(join(dir, 'LOCK'));
    await child.kill();
    // The killed holder left its LOCK behind; its pid is dead, so the lock is stale and taken over.
    expect(JSON.parse(await readFile(join(dir, 'LOCK'), 'utf8'))).toMatchObject({ pid: child.child.pid });
    const store = await fileStore({ directory: dir });
    expect(JSON.parse(await readFile(join(dir, 'LOCK'), 'utf8'))).toMatchObject({ pid: process.pid });
    await store.close();
    await expect(stat(join(dir, 'LOCK'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a second writer in the same process is refused too', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    await expect(fileStore({ directory: dir })).rejects.toMatchObject({ code: 'store_locked', holderPid: process.pid });
    await store.close();
    const again = await fileStore({ directory: dir });
    await again.close();
  });

  it('a stale lock left by a dead pid is taken over', async () => {
    const dir = freshDir();
    await (await fileStore({ directory: dir })).close();
    const pid = deadPid();
    await writeFile(join(dir, 'LOCK'), `${JSON.stringify({ pid, token: 'stale' })}\n`);
    const store = await fileStore({ directory: dir });
    expect(JSON.parse(await readFile(join(dir, 'LOCK'), 'utf8')).pid).toBe(process.pid);
    await store.close();
  });

  it('a read-only store opens while a writer holds the lock, sees its data and refuses writes', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const writer = await fileStore({ directory: dir });
    await writer.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const reader = await fileStore({ directory: dir, readOnly: true });
    expect((await collect((await reader.read(stream)).events)).map((e) => e.data)).toEqual([1]);
    for (const write of [
      () => reader.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 }),
      () => reader.putBlob(stream, new Uint8Array([1])),
      () => reader.deleteStream(stream, { expectedRevision: 'any' }),
    ]) {
      await expect(write()).rejects.toBeInstanceOf(StorageError);
    }
    await reader.close();
    await writer.close();
  });
});

describe('read-only', () => {
  it('a read-only open of a missing directory fails and creates nothing', async () => {
    const dir = join(freshDir(), 'missing');
    await expect(fileStore({ directory: dir, readOnly: true })).rejects.toBeInstanceOf(StorageError);
    await expect(stat(dir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a read-only view opened before the writer appends and compacts reads the stream as it is now, and so does its feed', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const writer = await fileStore({ directory: dir });
    await writer.append(
      stream,
      [1, 2, 3].map((n) => ({ type: 'N', data: n })),
      { expectedRevision: 'no_stream' },
    );
    const reader = await fileStore({ directory: dir, readOnly: true });
    expect((await collect((await reader.read(stream)).events)).map((e) => e.data)).toEqual([1, 2, 3]);
    await writer.append(stream, [{ type: 'N', data: 4 }], { expectedRevision: 3 });
    // An append after the open: the view's read shows it.
    expect((await collect((await reader.read(stream)).events)).map((e) => e.data)).toEqual([1, 2, 3, 4]);
    await writer.compact(stream, { revision: 2, state: null, identity: { stream, schemaVersion: 1 } });
    // The compaction shows whole: the snapshot and the events after it, never a mix of before and after.
    const now = await reader.read(stream);
    expect(now.revision).toBe(4);
    expect(now.snapshot).toEqual({ revision: 2, state: null, identity: { stream, schemaVersion: 1 } });
    expect((await collect(now.events)).map((e) => e.data)).toEqual([3, 4]);
    expect((await collect((await reader.read(stream, { fromRevision: 3 })).events)).map((e) => e.data)).toEqual([3, 4]);
    const feed = (await collect(reader.readAll())).map((record) => [record.type, record.revision]);
    expect(feed).toEqual((await collect(writer.readAll())).map((record) => [record.type, record.revision]));
    expect(feed).toEqual([
      ['N', 3],
      ['N', 4],
      ['$snapshot', 2],
    ]);
    await reader.close();
    await writer.close();
  });

  it('a read-only view opened before the writer replaces a snapshot or deletes the stream reads the stream as it is now', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const writer = await fileStore({ directory: dir });
    await writer.append(
      stream,
      [1, 2, 3].map((n) => ({ type: 'N', data: n })),
      { expectedRevision: 'no_stream' },
    );
    await writer.compact(stream, { revision: 1, state: 'one', identity: { stream, schemaVersion: 1 } });
    const reader = await fileStore({ directory: dir, readOnly: true });
    expect((await reader.read(stream)).snapshot?.state).toBe('one');
    await writer.compact(stream, { revision: 2, state: 'two', identity: { stream, schemaVersion: 1 } });
    const replaced = await reader.read(stream);
    expect(replaced.snapshot).toEqual({ revision: 2, state: 'two', identity: { stream, schemaVersion: 1 } });
    expect((await collect(replaced.events)).map((e) => e.data)).toEqual([3]);
    await writer.compact(stream, { revision: 3, state: 'three', identity: { stream, schemaVersion: 1 } });
    expect((await collect(reader.readAll())).map((record) => [record.type, record.revision])).toEqual([['$snapshot', 3]]);
    await writer.deleteStream(stream, { expectedRevision: 3 });
    expect(await reader.read(stream)).toMatchObject({ revision: 0 });
    expect(await collect(reader.streams())).toEqual([]);
    expect((await collect(reader.readAll())).map((record) => [record.type, record.revision])).toEqual([['$deleted', 3]]);
    await reader.close();
    await writer.close();
  });

  it('lock files left by a process killed while taking the lock are cleaned up by the next writer', async () => {
    const dir = freshDir();
    await (await fileStore({ directory: dir })).close();
    const pid = deadPid();
    const leftovers = [join(dir, `.LOCK.${pid}.0123abcd.tmp`), join(dir, `.LOCK.stale.${pid}.0123abcd`)];
    for (const path of leftovers) await writeFile(path, '{}');
    await (await fileStore({ directory: dir })).close();
    for (const path of leftovers) await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('files and paths', () => {
  it('creates files 0600 and directories 0700', async () => {
    const dir = join(freshDir(), 'store');
    const stream = randomStream();
    const store = await fileStore({ directory: dir });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.compact(stream, { revision: 1, state: null, identity: { stream, schemaVersion: 1 } });
    await store.append(stream, [{ type: 'A', data: 2 }], { expectedRevision: 1 });
    const sha = await store.putBlob(stream, new Uint8Array([9]));
    const other = randomStream();
    await store.append(other, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.deleteStream(other, { expectedRevision: 1 });
    await store.checkpoints!.save('projection', 'state');
    const mode = async (path: string) => (await stat(path)).mode & 0o777;
    for (const path of [dir, join(dir, 'log'), join(dir, 'blobs'), join(dir, 'checkpoints')]) expect(await mode(path), path).toBe(0o700);
    const segments = segmentsOf(dir);
    expect(segments.length).toBeGreaterThan(0);
    for (const path of [
      join(dir, 'LOCK'),
      join(dir, 'format.json'),
      join(dir, 'store-id.json'),
      ...segments,
      join(dir, 'blobs', sha),
      join(dir, 'checkpoints', 'projection'),
    ]) {
      expect(await mode(path), path).toBe(0o600);
    }
    await store.close();
  });

  it('a segment started after a segment is sealed is 0600 too', async () => {
    const { setSegmentBytesForTests } = await import('./log/log-writer.js');
    const previous = setSegmentBytesForTests(1);
    try {
      const dir = freshDir();
      const store = await fileStore({ directory: dir });
      for (let n = 1; n <= 3; n++) await store.append(randomStream(), [{ type: 'A', data: n }], { expectedRevision: 'no_stream' });
      await store.close();
      const segments = segmentsOf(dir);
      expect(segments.length).toBeGreaterThan(1);
      for (const path of segments) expect((await stat(path)).mode & 0o777, path).toBe(0o600);
    } finally {
      setSegmentBytesForTests(previous);
    }
  });

  it('refuses stream ids that could name a path outside the directory before touching anything', async () => {
    const root = freshDir();
    const dir = join(root, 'store');
    const store = await fileStore({ directory: dir });
    for (const stream of ['../escape', 'a/b', '.hidden', '', 'x'.repeat(129), 'a\0b']) {
      await expect(store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'any' })).rejects.toMatchObject({ code: 'invalid_input' });
      await expect(store.putBlob(stream, new Uint8Array([1]))).rejects.toMatchObject({ code: 'invalid_input' });
    }
    await store.close();
    // Nothing was written for them: no file beside the store, no line in its log.
    expect(readdirSync(root)).toEqual(['store']);
    expect(logLines(dir)).toEqual([]);
  });
});

describe('taking over a stale lock, three at once', () => {
  it('a writer that links its lock while a taker-over has moved a live one aside gives it up: never two writers', async () => {
    const { acquireLock } = await import('./lock.js');
    const { nodeFileSystem } = await import('./fs-layer.js');
    const dir = freshDir();
    const { mkdirSync, readFileSync, writeFileSync, existsSync } = await import('node:fs');
    mkdirSync(dir, { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    writeFileSync(join(dir, 'LOCK'), `${JSON.stringify({ pid: dead, token: 'feedfacefeedface' })}\n`);

    // C looked at the stale lock, then waits before moving it; meanwhile A takes the lock over.
    let cMayRename!: () => void;
    const cRenames = new Promise<void>((resolve) => (cMayRename = resolve));
    let cMayPutBack!: () => void;
    const cPutsBack = new Promise<void>((resolve) => (cMayPutBack = resolve));
    let cMovedIt!: () => void;
    const cMoved = new Promise<void>((resolve) => (cMovedIt = resolve));
    let putBacks = 0;
    const slowC = {
      ...nodeFileSystem,
      rename: async (from: string, to: string) => {
        await cRenames;
        await nodeFileSystem.rename(from, to);
        cMovedIt();
      },
      link: async (existing: string, path: string) => {
        if (existing.includes('.LOCK.stale.')) {
          if (putBacks++ === 0) await cPutsBack;
        }
        return nodeFileSystem.link(existing, path);
      },
    };
    const c = acquireLock(slowC, dir).then(
      () => 'acquired',
      (error: unknown) => error,
    );
    // C has read the stale lock and is waiting at its rename.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const a = await acquireLock(nodeFileSystem, dir);
    const aContent = readFileSync(join(dir, 'LOCK'), 'utf8');
    cMayRename();
    await cMoved;
    // A's lock is moved aside: B finds no LOCK, links its own, sees the claim of a live holder and gives up.
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
    await expect(acquireLock(nodeFileSystem, dir)).rejects.toBeInstanceOf(StoreLockedError);
    cMayPutBack();
    expect(await c).toBeInstanceOf(StoreLockedError);
    expect(readFileSync(join(dir, 'LOCK'), 'utf8'), "A's lock is back in place").toBe(aContent);
    await a.release();
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
  });
});
