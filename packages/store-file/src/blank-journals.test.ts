import { mkdir, readdir, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventStore, StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { eventsOf, freshDir, randomStream, withoutCleanClose } from './test-support.fixture.js';

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);
const blanksIn = async (dir: string) => (await readdir(dir).catch(() => [])).filter((name) => name.startsWith('blank-')).sort();
/** The blanks of both directories they are made in. */
const blanksOf = async (dir: string) => [...(await blanksIn(join(dir, 'blanks'))), ...(await blanksIn(join(dir, 'blanks', 'alternate')))].sort();
const BLANK_PATH = /[/\\]blanks[/\\](alternate[/\\])?blank-/;

/** A store whose blanks are ready: the first open makes them, the second finds them at once. */
async function storeWithBlanks(dir: string): Promise<EventStore> {
  await (await fileStore({ directory: dir })).close();
  return fileStore({ directory: dir });
}

async function append3(store: EventStore, stream: StreamId): Promise<void> {
  for (let n = 1; n <= 3; n++) await store.append(stream, [{ type: 'Noted', data: { n } }], { expectedRevision: n === 1 ? 'no_stream' : n - 1 });
}

describe('blank journals', () => {
  it('a new stream takes a blank left by the last open, which is then no longer a blank', async () => {
    const dir = freshDir();
    const store = await storeWithBlanks(dir);
    const before = await blanksOf(dir);
    expect(before.length).toBeGreaterThan(0);
    const stream = randomStream();
    await append3(store, stream);
    const after = await blanksOf(dir);
    expect(after.length).toBe(before.length - 1);
    expect(before.filter((name) => !after.includes(name))).toHaveLength(1);
    expect((await stat(journalOf(dir, stream))).size).toBeGreaterThan(0);
    await store.close();
  });

  it('a batch is made in the directory blanks are not being taken from, and the oldest blanks are used first', async () => {
    const dir = freshDir();
    let store = await storeWithBlanks(dir);
    const first = await blanksIn(join(dir, 'blanks'));
    expect(first.length).toBeGreaterThan(16);
    expect(await blanksIn(join(dir, 'blanks', 'alternate'))).toEqual([]);
    // Taking all but 15 starts the next batch, which goes to the other directory.
    for (let n = first.length; n > 15; n--) await append3(store, randomStream());
    await store.close();
    const second = await blanksIn(join(dir, 'blanks', 'alternate'));
    expect(second.length).toBeGreaterThan(16);
    expect(await blanksIn(join(dir, 'blanks'))).toHaveLength(15);
    // The 15 left from the first batch go before any of the second.
    store = await fileStore({ directory: dir });
    for (let n = 0; n < 15; n++) await append3(store, randomStream());
    expect(await blanksIn(join(dir, 'blanks'))).toEqual([]);
    expect(await blanksIn(join(dir, 'blanks', 'alternate'))).toEqual(second);
    await append3(store, randomStream());
    expect(await blanksIn(join(dir, 'blanks', 'alternate'))).toHaveLength(second.length - 1);
    await store.close();
  });

  it.each([['blanks'], ['blanks/alternate']])(
    'a journal whose rename a crash lost is found under its blank name in %s/: verify warns, a writer puts it back, nothing is lost',
    async (blanks) => {
      const dir = freshDir();
      const store = await storeWithBlanks(dir);
      const stream = randomStream();
      await append3(store, stream);
      const other = randomStream('other');
      await append3(store, other);
      await store.close();
      // The machine lost the rename: the records are in the blank's inode, under its name.
      const blank = join(dir, blanks, 'blank-00c0ffee00c0ffee');
      await mkdir(join(dir, blanks), { recursive: true });
      await rename(journalOf(dir, stream), blank);
      withoutCleanClose(dir);

      const view = await fileStore({ directory: dir, readOnly: true });
      const report = await (view.verify as NonNullable<EventStore['verify']>)();
      await view.close();
      expect(report.ok).toBe(true);
      const warning = report.problems.find((problem) => problem.file === blank);
      expect(warning?.severity).toBe('warning');
      expect(warning?.message).toContain(stream);
      await expect(stat(journalOf(dir, stream)), 'a read-only view moves nothing').rejects.toThrow();

      const writer = await fileStore({ directory: dir });
      expect((await eventsOf(writer, stream)).map((event) => [event.revision, event.data])).toEqual([
        [1, { n: 1 }],
        [2, { n: 2 }],
        [3, { n: 3 }],
      ]);
      expect((await eventsOf(writer, other)).map((event) => event.revision)).toEqual([1, 2, 3]);
      expect((await writer.append(stream, [{ type: 'Noted', data: { n: 4 } }], { expectedRevision: 3 })).revision).toBe(4);
      const clean = await (writer.verify as NonNullable<EventStore['verify']>)();
      expect(clean.problems).toEqual([]);
      await writer.close();
      expect(await blanksOf(dir)).not.toContain('blank-00c0ffee00c0ffee');
    },
  );

  it('a blank whose bytes are not a journal is kept and reported, and the store opens', async () => {
    const dir = freshDir();
    await storeWithBlanks(dir).then((store) => store.close());
    const blank = join(dir, 'blanks', 'blank-0123456789abcdef');
    await writeFile(blank, 'not a journal line');
    withoutCleanClose(dir);
    const store = await fileStore({ directory: dir });
    const stream = randomStream();
    await append3(store, stream);
    const report = await (store.verify as NonNullable<EventStore['verify']>)();
    expect(report.ok).toBe(true);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatchObject({ severity: 'warning', file: blank });
    expect(report.problems[0]?.message).toContain('not a journal');
    await store.close();
    expect((await stat(blank)).size).toBe('not a journal line'.length);
  });

  it('a blank holding the journal of a stream that has one too is left alone', async () => {
    const dir = freshDir();
    const store = await storeWithBlanks(dir);
    const stream = randomStream();
    await append3(store, stream);
    await store.close();
    const { readFile } = await import('node:fs/promises');
    const blank = join(dir, 'blanks', 'blank-feedfacefeedface');
    await writeFile(blank, await readFile(journalOf(dir, stream)));
    withoutCleanClose(dir);
    const reopened = await fileStore({ directory: dir });
    expect((await eventsOf(reopened, stream)).map((event) => event.revision)).toEqual([1, 2, 3]);
    const report = await (reopened.verify as NonNullable<EventStore['verify']>)();
    expect(report.problems.map((problem) => problem.file)).toEqual([blank]);
    await reopened.close();
    expect((await stat(blank)).size).toBeGreaterThan(0);
  });
  it('a batch that failed (too many open files) leaves no blank behind and is tried again later: new streams take blanks again', async () => {
    const dir = freshDir();
    let refuse = true;
    let tookBlank = 0;
    const store = await fileStore({
      directory: dir,
      fs: {
        open: async (path, flags, mode) => {
          if (refuse && BLANK_PATH.test(path) && flags !== 'r') {
            throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
          }
          return nodeFileSystem.open(path, flags, mode);
        },
        // Replacing `open` leaves journals to the asynchronous calls, which rename a blank with `rename`.
        rename: async (from, to) => {
          if (BLANK_PATH.test(from)) tookBlank++;
          await nodeFileSystem.rename(from, to);
        },
      },
    });
    // Without blanks, journals are created as before.
    await append3(store, randomStream());
    expect(tookBlank).toBe(0);
    expect(await blanksOf(dir)).toEqual([]);
    refuse = false;
    // The next attempt comes after the back-off, prompted by a new stream.
    await new Promise((resolve) => setTimeout(resolve, 400));
    let stream = randomStream();
    await append3(store, stream);
    // The batch is made in the background: a later new stream takes one of its blanks.
    for (let tries = 0; tookBlank === 0 && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      stream = randomStream();
      await append3(store, stream);
    }
    expect(tookBlank).toBe(1);
    expect(await eventsOf(store, stream)).toHaveLength(3);
    await store.close();
  });
});
