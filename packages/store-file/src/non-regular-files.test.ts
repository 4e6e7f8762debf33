import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StorageError, type EventStore } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, withoutCleanClose } from './test-support.fixture.js';

// Each test would hang forever on a FIFO opened for reading: the timeout, far above the real time, turns a hang
// into a failure.
const HANG = 30_000;
const posix = process.platform !== 'win32';

/** Puts a FIFO where `path` was. */
function fifoAt(path: string): void {
  rmSync(path, { force: true, recursive: true });
  execFileSync('mkfifo', [path]);
}

/** A closed store with stream `a` (two events, compacted at 1), a blob it owns, a deleted stream and a checkpoint. */
const BLOB = '039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81';

async function written(): Promise<{ dir: string; sha: string }> {
  const dir = freshDir();
  const store = await fileStore({ directory: dir });
  await store.append(
    'a',
    [
      { type: 'A', data: 1 },
      { type: 'A', data: 2 },
    ],
    { expectedRevision: 'no_stream' },
  );
  await store.compact('a', { revision: 1, state: { n: 1 }, identity: { stream: 'a', schemaVersion: 1 } });
  const sha = await store.putBlob('a', new Uint8Array([1, 2, 3]));
  expect(sha).toBe(BLOB);
  await store.append('gone', [{ type: 'G', data: 0 }], { expectedRevision: 'no_stream' });
  await store.deleteStream('gone', { expectedRevision: 1 });
  await store.checkpoints!.save('projection', 'state');
  await store.close();
  return { dir, sha };
}

/** Every way into the store's files, each settled: what each did, or the error it rejected with. */
async function everyCall(dir: string, readOnly: boolean): Promise<unknown[]> {
  let store: EventStore;
  try {
    store = await fileStore({ directory: dir, readOnly });
  } catch (error) {
    return [error];
  }
  const outcomes: unknown[] = [];
  const attempt = async (work: () => Promise<unknown>) => outcomes.push(await work().catch((error: unknown) => error));
  await attempt(async () => collect((await store.read('a')).events));
  await attempt(() => collect(store.readAll()));
  await attempt(() => store.verify!());
  await attempt(() => store.status!());
  await attempt(() => store.checkpoints!.load('projection'));
  await attempt(() => collect(store.blobs('a')));
  await store.close().catch(() => undefined);
  return outcomes;
}

/** True when `outcome` is a StorageError naming `path`, or a verify report with a problem in `path`. */
function names(outcome: unknown, path: string): boolean {
  if (outcome instanceof StorageError) return outcome.message.includes(path);
  const problems = (outcome as { problems?: { file?: string }[] } | undefined)?.problems;
  return problems?.some((problem) => problem.file === path) ?? false;
}

describe.skipIf(!posix)('files that are not what they seem, inside the store', () => {
  it.each([
    ['a journal', (dir: string) => join(dir, 'streams', 'a.jsonl')],
    ['a snapshot', (dir: string) => join(dir, 'streams', 'a.snapshot.json')],
    ['the format file', (dir: string) => join(dir, 'format.json')],
    ['the store id', (dir: string) => join(dir, 'store-id.json')],
    ['the tombstones', (dir: string) => join(dir, 'tombstones.jsonl')],
    ['an owners file', (dir: string) => join(dir, 'owners', 'a.jsonl')],
    ['a checkpoint', (dir: string) => join(dir, 'checkpoints', 'projection')],
    ['a blob', (dir: string) => join(dir, 'blobs', BLOB)],
    ['the lock', (dir: string) => join(dir, 'LOCK')],
  ])(
    'a FIFO in place of %s never hangs open, read, readAll, verify, status or a load: what fails is a StorageError naming it',
    async (_label, where) => {
      for (const readOnly of [true, false]) {
        const { dir } = await written();
        const path = where(dir);
        fifoAt(path);
        const outcomes = await everyCall(dir, readOnly);
        for (const outcome of outcomes) if (outcome instanceof Error) expect(outcome).toBeInstanceOf(StorageError);
        expect(outcomes.some((outcome) => names(outcome, path))).toBe(true);
      }
    },
    HANG,
  );

  it.each([
    ['the manifest', 'manifest.json'],
    ['the clean-close mark', 'clean-close.json'],
  ])(
    'a FIFO in place of %s, which only speeds an open up, is passed over: the store opens and reads from the files',
    async (_label, name) => {
      for (const readOnly of [true, false]) {
        const { dir } = await written();
        fifoAt(join(dir, name));
        const outcomes = await everyCall(dir, readOnly);
        expect(outcomes.filter((outcome) => outcome instanceof Error)).toEqual([]);
        expect((outcomes[0] as { data: unknown }[]).map((event) => event.data)).toEqual([2]);
      }
    },
    HANG,
  );

  it(
    'a journal linked to /dev/zero is refused as a symbolic link, never read',
    async () => {
      const { dir } = await written();
      const path = join(dir, 'streams', 'a.jsonl');
      rmSync(path);
      symlinkSync('/dev/zero', path);
      withoutCleanClose(dir);
      for (const readOnly of [true, false]) {
        const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StorageError);
        expect(String(error)).toContain(path);
        expect(String(error)).toContain('is a symbolic link');
      }
    },
    HANG,
  );
});

describe.skipIf(!posix)('links inside the store never make it write outside its directory', () => {
  /** A directory outside the store holding a copy of what the link replaced; returns how to read it back. */
  function linkedAway(path: string): () => string[] {
    const outside = join(freshDir(), 'outside');
    renameSync(path, outside);
    symlinkSync(outside, path);
    return () => readdirSync(outside).sort();
  }

  it.each(['streams', 'checkpoints', 'owners', 'blobs'])(
    'a linked %s/ is refused at open, naming it, and nothing is written through it',
    async (name) => {
      const { dir } = await written();
      const path = join(dir, name);
      const contents = linkedAway(path);
      const before = contents();
      for (const readOnly of [true, false]) {
        const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StorageError);
        expect(String(error)).toContain(`${path} is not a directory`);
      }
      expect(contents()).toEqual(before);
    },
    HANG,
  );

  it.each([
    ['the tombstones', 'tombstones.jsonl'],
    ['an owners file', join('owners', 'a.jsonl')],
  ])(
    'a linked %s is refused naming it, and the file it points at is left as it was',
    async (_label, name) => {
      const { dir } = await written();
      const path = join(dir, name);
      const outside = join(freshDir(), 'outside.jsonl');
      renameSync(path, outside);
      symlinkSync(outside, path);
      const before = readFileSync(outside);
      const outcomes: unknown[] = [];
      const store = await fileStore({ directory: dir }).catch((error: unknown) => error);
      if (store instanceof Error) outcomes.push(store);
      else {
        const opened = store as EventStore;
        outcomes.push(await opened.putBlob('a', new Uint8Array([9])).catch((error: unknown) => error));
        await opened.append('b', [{ type: 'B', data: 0 }], { expectedRevision: 'no_stream' });
        outcomes.push(await opened.deleteStream('b', { expectedRevision: 1 }).catch((error: unknown) => error));
        await opened.close().catch(() => undefined);
      }
      expect(outcomes.some((outcome) => outcome instanceof StorageError && outcome.message.includes(path))).toBe(true);
      expect(readFileSync(outside)).toEqual(before);
    },
    HANG,
  );

  it(
    'a store directory reached through a link the caller chose opens, writes and closes as any other',
    async () => {
      const real = freshDir();
      const link = join(freshDir(), 'link');
      symlinkSync(real, link);
      const store = await fileStore({ directory: link });
      await store.append('a', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      await store.close();
      expect(existsSync(join(real, 'streams', 'a.jsonl'))).toBe(true);
      const again = await fileStore({ directory: link, readOnly: true });
      expect((await again.read('a')).revision).toBe(1);
      await again.close();
    },
    HANG,
  );
});
