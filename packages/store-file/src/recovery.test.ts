import { readFile, stat, writeFile, copyFile, appendFile, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, type EventStore, type StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { eventPayload, frameLine } from './journal-codec.js';
import { collect, eventsOf, freshDir, openFailure, randomStream, withoutCleanClose } from './test-support.fixture.js';

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);

/** A store with `batches` appended to one stream, closed; returns the journal's bytes and line starts. */
async function writtenStore(batches: number[]): Promise<{ dir: string; stream: StreamId; bytes: Buffer; lineStarts: number[] }> {
  const dir = freshDir();
  const stream = randomStream();
  const store = await fileStore({ directory: dir });
  let revision = 0;
  for (const size of batches) {
    const events = Array.from({ length: size }, (_, i) => ({ type: 'Noted', data: { n: revision + i + 1, text: 'ünïcode ✓' } }));
    revision = (await store.append(stream, events, { expectedRevision: revision })).revision;
  }
  await store.close();
  const bytes = await readFile(journalOf(dir, stream));
  const lineStarts = [0];
  for (let i = 0; i < bytes.length - 1; i++) if (bytes[i] === 0x0a) lineStarts.push(i + 1);
  return { dir, stream, bytes, lineStarts };
}

/** Files changed by hand stand for a crash or for damage: the store is opened as after a crash (see `withoutCleanClose`). */
async function openFails(dir: string): Promise<CorruptionError> {
  withoutCleanClose(dir);
  const error = await openFailure({ directory: dir });
  expect(error).toBeInstanceOf(CorruptionError);
  return error as CorruptionError;
}

async function withStore<T>(dir: string, use: (store: EventStore) => Promise<T>, readOnly = false): Promise<T> {
  withoutCleanClose(dir);
  const store = await fileStore({ directory: dir, readOnly });
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

describe('torn tails', () => {
  it('a last record cut at every byte offset is dropped, the committed prefix reads back and the next append works', async () => {
    const { dir, stream, bytes, lineStarts } = await writtenStore([1, 1, 1]);
    const lastStart = lineStarts[lineStarts.length - 1] as number;
    const path = journalOf(dir, stream);
    // Cut exactly before it, the journal ends with whole lines: no write cut short explains the missing one, which
    // the manifest records as acknowledged.
    await writeFile(path, bytes.subarray(0, lastStart));
    expect((await openFails(dir)).message).toMatch(/short of the \d+ bytes the manifest records/);
    for (let cut = lastStart + 1; cut < bytes.length; cut++) {
      await writeFile(path, bytes.subarray(0, cut));
      await withStore(dir, async (store) => {
        const events = await eventsOf(store, stream);
        expect(
          events.map((e) => e.revision),
          `cut at ${cut}`,
        ).toEqual([1, 2]);
        expect((await stat(path)).size, 'the torn tail is truncated on open').toBe(lastStart);
        await store.append(stream, [{ type: 'After', data: { cut } }], { expectedRevision: 2 });
      });
      await withStore(dir, async (store) => {
        const events = await eventsOf(store, stream);
        expect(events.map((e) => [e.revision, e.type])).toEqual([
          [1, 'Noted'],
          [2, 'Noted'],
          [3, 'After'],
        ]);
      });
    }
  });

  it('a multi-event batch cut anywhere is dropped whole, never half-applied', async () => {
    const { dir, stream, bytes, lineStarts } = await writtenStore([2, 3]);
    const batchStart = lineStarts[2] as number;
    const path = journalOf(dir, stream);
    for (let cut = batchStart + 1; cut < bytes.length; cut += 7) {
      await writeFile(path, bytes.subarray(0, cut));
      const revisions = await withStore(dir, async (store) => (await eventsOf(store, stream)).map((e) => e.revision));
      expect(revisions, `cut at ${cut}`).toEqual([1, 2]);
    }
  });

  it('a file re-extended with NUL bytes after the last record is a torn tail', async () => {
    const { dir, stream, bytes } = await writtenStore([1, 2]);
    const path = journalOf(dir, stream);
    await appendFile(path, Buffer.alloc(4096));
    await withStore(dir, async (store) => {
      expect((await eventsOf(store, stream)).map((e) => e.revision)).toEqual([1, 2, 3]);
      expect((await stat(path)).size).toBe(bytes.length);
      await store.append(stream, [{ type: 'After', data: null }], { expectedRevision: 3 });
    });
    await withStore(dir, async (store) => expect((await eventsOf(store, stream)).map((e) => e.revision)).toEqual([1, 2, 3, 4]));
  });

  it('a partial record followed by NUL bytes is a torn tail', async () => {
    const { dir, stream, bytes, lineStarts } = await writtenStore([1, 1]);
    const path = journalOf(dir, stream);
    const lastStart = lineStarts[1] as number;
    await writeFile(path, Buffer.concat([bytes.subarray(0, lastStart + 40), Buffer.alloc(100)]));
    await withStore(dir, async (store) => expect((await eventsOf(store, stream)).map((e) => e.revision)).toEqual([1]));
  });

  it('a complete last line with a wrong checksum is corruption, not a torn tail, and is left in place', async () => {
    const { dir, stream, bytes, lineStarts } = await writtenStore([1, 1, 1]);
    const path = journalOf(dir, stream);
    const damaged = Buffer.from(bytes);
    flipBits(damaged, (lineStarts[2] as number) + 80, 0x01);
    await writeFile(path, damaged);
    const error = await openFails(dir);
    expect(error.file).toBe(path);
    expect(error.line).toBe(3);
    expect(await readFile(path)).toEqual(damaged);
  });

  it('a read-only open ignores a torn tail without cutting it', async () => {
    const { dir, stream, bytes } = await writtenStore([1, 1]);
    const path = journalOf(dir, stream);
    const torn = bytes.subarray(0, bytes.length - 10);
    await writeFile(path, torn);
    await withStore(dir, async (store) => expect((await eventsOf(store, stream)).map((e) => e.revision)).toEqual([1]), true);
    expect(await readFile(path)).toEqual(torn);
  });
});

describe('damage is reported, never folded', () => {
  it('flipping any single byte of a committed record fails the open naming the file and the line', async () => {
    const { dir, stream, bytes, lineStarts } = await writtenStore([1, 2]);
    withoutCleanClose(dir);
    const path = journalOf(dir, stream);
    const lineOf = (offset: number) => lineStarts.filter((start) => start <= offset).length;
    let flips = 0;
    for (let offset = 0; offset < bytes.length; offset++) {
      for (const mask of [0x01, 0x20, 0x80]) {
        const damaged = Buffer.from(bytes);
        flipBits(damaged, offset, mask);
        await writeFile(path, damaged);
        const error = await fileStore({ directory: dir, readOnly: true }).then(
          async (store) => {
            const events = await eventsOf(store, stream).catch((e: unknown) => e);
            await store.close();
            return { folded: events };
          },
          (e: unknown) => e,
        );
        expect(error, `flip ${mask} at byte ${offset} must be reported`).toBeInstanceOf(CorruptionError);
        expect((error as CorruptionError).file).toBe(path);
        expect((error as CorruptionError).line, `flip at byte ${offset}`).toBe(lineOf(offset));
        flips++;
      }
    }
    expect(flips).toBe(bytes.length * 3);
    // Nothing was rewritten by any of those opens.
    await writeFile(path, bytes);
    await withStore(dir, async (store) => expect((await eventsOf(store, stream)).length).toBe(3));
  });

  it('a revision gap is corruption at the line after the gap', async () => {
    const dir = freshDir();
    const stream = randomStream();
    await withStore(dir, async (store) => {
      await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    });
    const path = journalOf(dir, stream);
    await appendFile(path, frameLine(eventPayload(stream, 3, 10, new Date().toISOString(), 'A', undefined, false, '3')));
    const error = await openFails(dir);
    expect(error.file).toBe(path);
    expect(error.line).toBe(2);
    expect(error.message).toMatch(/revision 3 follows revision 1/);
  });

  it('a snapshot whose identity names another stream is corruption, checked before its state is used', async () => {
    const dir = freshDir();
    const [a, b] = [randomStream('a'), randomStream('b')];
    await withStore(dir, async (store) => {
      for (const stream of [a, b]) {
        await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
        await store.compact(stream, { revision: 1, state: { of: stream }, identity: { stream, schemaVersion: 1 } });
      }
    });
    const snapshotB = join(dir, 'streams', `${b}.snapshot.json`);
    await copyFile(join(dir, 'streams', `${a}.snapshot.json`), snapshotB);
    const error = await openFails(dir);
    expect(error.file).toBe(snapshotB);
    expect(error.line).toBe(1);
    expect(error.message).toMatch(/identity names stream/);
  });

  it('a journal line whose checksum matches but whose payload is not an event is corruption', async () => {
    const dir = freshDir();
    const stream = randomStream();
    await withStore(dir, async (store) => {
      await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    });
    const path = journalOf(dir, stream);
    await appendFile(path, frameLine(JSON.stringify({ hello: 'world' })));
    const error = await openFails(dir);
    expect(error.line).toBe(2);
  });
});

describe('interrupted operations', () => {
  it('a delete whose tombstone is durable but whose files remain is finished on open', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const path = journalOf(dir, stream);
    let sha = '';
    await withStore(dir, async (store) => {
      await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      sha = await store.putBlob(stream, new Uint8Array([1, 2, 3]));
    });
    const saved = await readFile(path);
    const owners = await readFile(join(dir, 'owners', `${stream}.jsonl`));
    await withStore(dir, (store) => store.deleteStream(stream, { expectedRevision: 1 }));
    // As if the process died after the tombstone, before removing the files.
    await writeFile(path, saved);
    await writeFile(join(dir, 'owners', `${stream}.jsonl`), owners);
    await writeFile(join(dir, 'blobs', sha), new Uint8Array([1, 2, 3]));
    await withStore(dir, async (store) => {
      expect((await store.read(stream)).revision).toBe(0);
      expect(await collect(store.streams())).toEqual([]);
      expect(await store.getBlob(sha)).toBeUndefined();
      const feed = await collect(store.readAll());
      expect(feed.map((r) => r.type)).toEqual(['$deleted']);
    });
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a snapshot written before the journal rewrite folds the same as a finished compaction', async () => {
    const dir = freshDir();
    const stream = randomStream();
    await withStore(dir, async (store) => {
      await store.append(
        stream,
        [1, 2, 3, 4].map((n) => ({ type: 'N', data: n })),
        { expectedRevision: 'no_stream' },
      );
    });
    const full = await readFile(journalOf(dir, stream));
    await withStore(dir, (store) => store.compact(stream, { revision: 2, state: { sum: 3 }, identity: { stream, schemaVersion: 1 } }));
    // As if the process died after the snapshot was renamed into place, before the journal was rewritten.
    await writeFile(journalOf(dir, stream), full);
    await withStore(dir, async (store) => {
      const read = await store.read(stream);
      expect(read.revision).toBe(4);
      expect(read.snapshot?.state).toEqual({ sum: 3 });
      expect((await collect(read.events)).map((e) => e.data)).toEqual([3, 4]);
      const next = await store.append(stream, [{ type: 'N', data: 5 }], { expectedRevision: 4 });
      expect(next.revision).toBe(5);
    });
  });

  it('leftover temporary files of an interrupted atomic write are removed by the next writer', async () => {
    const dir = freshDir();
    await withStore(dir, async () => undefined);
    const temp = join(dir, 'streams', '.x.snapshot.json.123.1.abcd.tmp');
    await writeFile(temp, 'half');
    await withStore(dir, async () => undefined);
    await expect(stat(temp)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('positions survive restart, compaction and deletion', () => {
  it('the counter resumes past the largest position found in journals, snapshots and tombstones', async () => {
    const dir = freshDir();
    const [a, b] = [randomStream('a'), randomStream('b')];
    await withStore(dir, async (store) => {
      await store.append(
        a,
        [
          { type: 'A', data: 1 },
          { type: 'A', data: 2 },
        ],
        { expectedRevision: 'no_stream' },
      );
    });
    await withStore(dir, async (store) => {
      expect((await store.append(b, [{ type: 'B', data: 1 }], { expectedRevision: 'no_stream' })).position).toBe(3);
      await store.compact(a, { revision: 2, state: null, identity: { stream: a, schemaVersion: 1 } });
    });
    await withStore(dir, async (store) => {
      // Position 4 is a's $snapshot, which replaced the journal that held 1 and 2.
      expect(await stat(journalOf(dir, a)).catch((e: { code: string }) => e.code)).toBe('ENOENT');
      await store.deleteStream(b, { expectedRevision: 1 });
    });
    await withStore(dir, async (store) => {
      const feed = await collect(store.readAll());
      expect(feed.map((r) => [r.type, r.position])).toEqual([
        ['$snapshot', 4],
        ['$deleted', 5],
      ]);
      expect((await store.append(a, [{ type: 'A', data: 3 }], { expectedRevision: 2 })).position).toBe(6);
    });
  });

  it('readAll from past the last position does no I/O and returns nothing', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const reads = { count: 0 };
    const counted: Partial<FileSystem> = {
      open: async (path, flags, mode) => (reads.count++, nodeFileSystem.open(path, flags, mode)),
      read: async (...args) => (reads.count++, nodeFileSystem.read(...args)),
      readFile: async (path) => (reads.count++, nodeFileSystem.readFile(path)),
      readdir: async (path) => (reads.count++, nodeFileSystem.readdir(path)),
    };
    const store = await fileStore({ directory: dir, fs: counted });
    try {
      const { position } = await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      reads.count = 0;
      expect(await collect(store.readAll({ fromPosition: position + 1 }))).toEqual([]);
      expect(reads.count).toBe(0);
      expect((await collect(store.readAll({ fromPosition: position }))).map((r) => r.position)).toEqual([position]);
      expect(reads.count).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });
});

describe('a journal torn before its first record', () => {
  it('an empty journal file (all of it torn) leaves the stream absent and appendable', async () => {
    const { dir, stream } = await writtenStore([1]);
    await truncate(journalOf(dir, stream), 20);
    await withStore(dir, async (store) => {
      expect((await store.read(stream)).revision).toBe(0);
      expect(await collect(store.streams())).toEqual([]);
      expect((await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' })).revision).toBe(1);
    });
    await withStore(dir, async (store) => expect((await store.read(stream)).revision).toBe(1));
  });
});

/** Flips the bits of `mask` in byte `offset` of `bytes`. */
function flipBits(bytes: Buffer, offset: number, mask: number): void {
  bytes[offset] = (bytes[offset] as number) ^ mask;
}
