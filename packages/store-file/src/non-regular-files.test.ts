import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StorageError, type EventStore } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { setSegmentBytesForTests } from './log/log-writer.js';
import { collect, freshDir, segmentsOf } from './test-support.fixture.js';

// Each test would hang forever on a FIFO opened for reading: the timeout, far above the real time, turns a hang
// into a failure.
const HANG = 30_000;
const posix = process.platform !== 'win32';
if (!posix) console.info('store-file: the tests of FIFOs, sockets and links inside the store are skipped: they need POSIX');

// Small segments, so a store has sealed segments as well as the active one.
let previousSegmentBytes = 0;
beforeAll(() => {
  previousSegmentBytes = setSegmentBytesForTests(1);
});
afterAll(() => {
  setSegmentBytesForTests(previousSegmentBytes);
});

/** Puts a FIFO where `path` was. */
function fifoAt(path: string): void {
  rmSync(path, { force: true, recursive: true });
  execFileSync('mkfifo', [path]);
}

const BLOB = '039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81';

/** A closed store with stream `a` (two events, compacted at 1), a blob it owns, a deleted stream and a checkpoint, in several segments. */
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
  expect(segmentsOf(dir).length).toBeGreaterThan(2);
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
  await attempt(() => store.getBlob(BLOB));
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
    ['the first (sealed) segment', (dir: string) => segmentsOf(dir)[0] as string],
    ['the last (active) segment', (dir: string) => segmentsOf(dir).at(-1) as string],
    ['the format file', (dir: string) => join(dir, 'format.json')],
    ['the store id', (dir: string) => join(dir, 'store-id.json')],
    ['a checkpoint', (dir: string) => join(dir, 'checkpoints', 'projection')],
    ['a blob', (dir: string) => join(dir, 'blobs', BLOB)],
    ['the lock', (dir: string) => join(dir, 'LOCK')],
  ])(
    'a FIFO in place of %s never hangs open, read, readAll, verify, status, a load or a blob read: what fails is a StorageError naming it',
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

  it(
    'a FIFO in the index directory, which only speeds an open up, is passed over: the store opens and reads from the log',
    async () => {
      for (const readOnly of [true, false]) {
        const { dir } = await written();
        mkdirSync(join(dir, 'index'), { recursive: true });
        fifoAt(join(dir, 'index', `${'1'.padStart(20, '0')}.json`));
        const outcomes = await everyCall(dir, readOnly);
        expect(outcomes.filter((outcome) => outcome instanceof Error)).toEqual([]);
        expect((outcomes[0] as { data: unknown }[]).map((event) => event.data)).toEqual([2]);
      }
    },
    HANG,
  );

  it(
    'a segment linked to /dev/zero is refused as a symbolic link, never read',
    async () => {
      for (const which of ['first', 'last'] as const) {
        const { dir } = await written();
        const segments = segmentsOf(dir);
        const path = (which === 'first' ? segments[0] : segments.at(-1)) as string;
        rmSync(path);
        symlinkSync('/dev/zero', path);
        for (const readOnly of [true, false]) {
          const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(StorageError);
          expect(String(error)).toContain(path);
          expect(String(error)).toContain('is a symbolic link');
        }
      }
    },
    HANG,
  );
});

describe.skipIf(!posix)('links inside the store never make it write outside its directory', () => {
  /** Moves what is at `path` outside the store and links `path` to it; returns how to read what is outside back. */
  function linkedAway(path: string): () => Record<string, string> {
    const outside = join(freshDir(), 'outside');
    renameSync(path, outside);
    symlinkSync(outside, path);
    return () => {
      const files: Record<string, string> = {};
      for (const name of readdirSync(outside).sort()) files[name] = readFileSync(join(outside, name)).toString('base64');
      return files;
    };
  }

  it.each(['log', 'blobs', 'checkpoints', 'index'])(
    'a linked %s/ is refused at open, naming it, and nothing is written through it',
    async (name) => {
      const { dir } = await written();
      const path = join(dir, name);
      mkdirSync(path, { recursive: true });
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
    ['the last segment', (dir: string) => segmentsOf(dir).at(-1) as string],
    ['the format file', (dir: string) => join(dir, 'format.json')],
    ['the store id', (dir: string) => join(dir, 'store-id.json')],
    ['a checkpoint', (dir: string) => join(dir, 'checkpoints', 'projection')],
    ['a blob', (dir: string) => join(dir, 'blobs', BLOB)],
  ])(
    'a linked %s is refused naming it, and the file it points at is left as it was',
    async (_label, where) => {
      const { dir } = await written();
      const path = where(dir);
      const outside = join(freshDir(), 'outside');
      copyFileSync(path, outside);
      rmSync(path);
      symlinkSync(outside, path);
      const before = readFileSync(outside);
      const outcomes: unknown[] = [];
      const store = await fileStore({ directory: dir }).catch((error: unknown) => error);
      if (store instanceof Error) outcomes.push(store);
      else {
        const opened = store as EventStore;
        outcomes.push(await opened.checkpoints!.load('projection').catch((error: unknown) => error));
        outcomes.push(await opened.getBlob(BLOB).catch((error: unknown) => error));
        outcomes.push(await opened.putBlob('a', new Uint8Array([1, 2, 3])).catch((error: unknown) => error));
        outcomes.push(await opened.append('b', [{ type: 'B', data: 0 }], { expectedRevision: 'no_stream' }).catch((error: unknown) => error));
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
      expect(segmentsOf(real).length).toBeGreaterThan(0);
      expect(readdirSync(real)).toContain('format.json');
      const again = await fileStore({ directory: link, readOnly: true });
      expect((await again.read('a')).revision).toBe(1);
      await again.close();
      const writer = await fileStore({ directory: link });
      expect((await writer.append('a', [{ type: 'A', data: 2 }], { expectedRevision: 1 })).revision).toBe(2);
      await writer.close();
    },
    HANG,
  );
});
