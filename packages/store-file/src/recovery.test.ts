import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CorruptionError, type EventStore, type StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { eventPayload, frameLine } from './journal-codec.js';
import { setSegmentBytesForTests } from './log/log-writer.js';
import {
  collect,
  eventsOf,
  freshDir,
  logLines,
  openFailure,
  randomStream,
  segmentsOf,
  withoutIndexSnapshots,
  type SegmentLine,
} from './test-support.fixture.js';

/** What the segment size was before a test made segments small. */
let defaultSegmentBytes: number | undefined;
afterEach(() => {
  if (defaultSegmentBytes !== undefined) setSegmentBytesForTests(defaultSegmentBytes);
  defaultSegmentBytes = undefined;
});

/** Makes the writer seal a segment after every flush, so each batch starts a segment of its own. */
function segmentPerFlush(): void {
  defaultSegmentBytes ??= setSegmentBytesForTests(1);
}

/**
 * A closed store with `batches` appended to one stream; returns its last segment, that segment's bytes and its
 * lines (the other segments hold nothing else: a fresh store's log has only these events).
 */
async function writtenStore(batches: number[]): Promise<{ dir: string; stream: StreamId; path: string; bytes: Buffer; lines: SegmentLine[] }> {
  const dir = freshDir();
  const stream = randomStream();
  const store = await fileStore({ directory: dir });
  let revision = 0;
  for (const size of batches) {
    const events = Array.from({ length: size }, (_, i) => ({ type: 'Noted', data: { n: revision + i + 1, text: 'ünïcode ✓' } }));
    revision = (await store.append(stream, events, { expectedRevision: revision })).revision;
  }
  await store.close();
  const path = segmentsOf(dir).at(-1) as string;
  return { dir, stream, path, bytes: await readFile(path), lines: logLines(dir).filter((line) => line.path === path) };
}

/**
 * Opening the store in `dir` fails with a CorruptionError. Segments changed by hand stand for a crash or for
 * damage, which an open finds only in the log after the newest index snapshot: the snapshots are removed first.
 */
async function openFails(dir: string, readOnly = false): Promise<CorruptionError> {
  withoutIndexSnapshots(dir);
  const error = await openFailure({ directory: dir, readOnly });
  expect(error).toBeInstanceOf(CorruptionError);
  return error as CorruptionError;
}

async function withStore<T>(dir: string, use: (store: EventStore) => Promise<T>, readOnly = false): Promise<T> {
  const store = await fileStore({ directory: dir, readOnly });
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

const revisionsOf = async (dir: string, stream: StreamId, readOnly = false) =>
  withStore(dir, async (store) => (await eventsOf(store, stream)).map((event) => event.revision), readOnly);

describe('torn tails', () => {
  it('the last batch cut at every byte offset: a view ignores it without cutting, a writer cuts it, the prefix reads back and the next append works', async () => {
    const { dir, stream, path, bytes, lines } = await writtenStore([1, 1, 1]);
    const lastStart = (lines[2] as SegmentLine).offset;
    for (let cut = lastStart + 1; cut < bytes.length; cut++) {
      const torn = bytes.subarray(0, cut);
      await writeFile(path, torn);
      withoutIndexSnapshots(dir);
      expect(await revisionsOf(dir, stream, true), `view, cut at ${cut}`).toEqual([1, 2]);
      expect(await readFile(path), `a view cuts nothing (cut at ${cut})`).toEqual(torn);
      await withStore(dir, async (store) => {
        expect(
          (await eventsOf(store, stream)).map((e) => e.revision),
          `writer, cut at ${cut}`,
        ).toEqual([1, 2]);
        expect((await stat(path)).size, 'the torn tail is cut on open').toBe(lastStart);
        await store.append(stream, [{ type: 'After', data: { cut } }], { expectedRevision: 2 });
      });
      await withStore(dir, async (store) => {
        expect((await eventsOf(store, stream)).map((e) => [e.revision, e.type])).toEqual([
          [1, 'Noted'],
          [2, 'Noted'],
          [3, 'After'],
        ]);
      });
    }
  });

  it('a multi-event batch cut anywhere, also between its whole lines, is dropped whole, never half-applied', async () => {
    const { dir, stream, path, bytes, lines } = await writtenStore([2, 3]);
    const batchStart = (lines[2] as SegmentLine).offset;
    // Cut right after a whole line that says more follows (lines 3 and 4), and at many offsets inside lines.
    const cuts = [(lines[3] as SegmentLine).offset, (lines[4] as SegmentLine).offset];
    for (let cut = batchStart + 1; cut < bytes.length; cut += 7) cuts.push(cut);
    for (const cut of cuts) {
      await writeFile(path, bytes.subarray(0, cut));
      withoutIndexSnapshots(dir);
      expect(await revisionsOf(dir, stream, true), `view, cut at ${cut}`).toEqual([1, 2]);
      expect(await revisionsOf(dir, stream), `writer, cut at ${cut}`).toEqual([1, 2]);
      expect((await stat(path)).size).toBe(batchStart);
    }
  });

  it.each([['kept'], ['removed']])('a segment re-extended with NUL bytes after its last line is a torn tail (index snapshots %s)', async (snapshots) => {
    const { dir, stream, path, bytes } = await writtenStore([1, 2]);
    await appendFile(path, Buffer.alloc(4096));
    if (snapshots === 'removed') withoutIndexSnapshots(dir);
    await withStore(dir, async (store) => {
      expect((await eventsOf(store, stream)).map((e) => e.revision)).toEqual([1, 2, 3]);
      expect((await stat(path)).size).toBe(bytes.length);
      await store.append(stream, [{ type: 'After', data: null }], { expectedRevision: 3 });
    });
    expect(await revisionsOf(dir, stream)).toEqual([1, 2, 3, 4]);
  });

  it('a partial line followed by NUL bytes is a torn tail', async () => {
    const { dir, stream, path, bytes, lines } = await writtenStore([1, 1]);
    const lastStart = (lines[1] as SegmentLine).offset;
    const torn = Buffer.concat([bytes.subarray(0, lastStart + 40), Buffer.alloc(100)]);
    await writeFile(path, torn);
    withoutIndexSnapshots(dir);
    expect(await revisionsOf(dir, stream, true)).toEqual([1]);
    expect(await readFile(path)).toEqual(torn);
    expect(await revisionsOf(dir, stream)).toEqual([1]);
    expect((await stat(path)).size).toBe(lastStart);
  });

  it('a complete last line with a wrong checksum is corruption, not a torn tail, and is left in place', async () => {
    const { dir, path, bytes, lines } = await writtenStore([1, 1, 1]);
    const damaged = Buffer.from(bytes);
    flipBits(damaged, (lines[2] as SegmentLine).offset + 80, 0x01);
    await writeFile(path, damaged);
    for (const readOnly of [true, false]) {
      const error = await openFails(dir, readOnly);
      expect(error.file).toBe(path);
      expect(error.line).toBe(3);
      expect(await readFile(path)).toEqual(damaged);
    }
  });

  it('in a log of several segments, a torn tail is cut only at the end of the last; the same cut in a sealed segment is corruption naming it', async () => {
    segmentPerFlush();
    const { dir, stream } = await writtenStore([1, 1, 1]);
    const segments = segmentsOf(dir);
    expect(segments).toHaveLength(3);
    const [first, , last] = segments as [string, string, string];
    const sealed = await readFile(first);
    await writeFile(first, sealed.subarray(0, sealed.length - 10));
    for (const readOnly of [true, false]) {
      const error = await openFails(dir, readOnly);
      expect(error.file).toBe(first);
      expect(error.line).toBe(1);
      expect((await readFile(first)).length, 'nothing was cut').toBe(sealed.length - 10);
    }
    await writeFile(first, sealed);
    const active = await readFile(last);
    await writeFile(last, active.subarray(0, active.length - 10));
    withoutIndexSnapshots(dir);
    await withStore(dir, async (store) => {
      expect((await eventsOf(store, stream)).map((e) => e.revision)).toEqual([1, 2]);
      expect((await stat(last)).size).toBe(0);
      await store.append(stream, [{ type: 'After', data: null }], { expectedRevision: 2 });
    });
    expect(await revisionsOf(dir, stream)).toEqual([1, 2, 3]);
  });
});

describe('damage is reported, never folded', () => {
  it('flipping any single byte of a committed line fails the open naming the segment file and the line', async () => {
    const { dir, stream, path, bytes, lines } = await writtenStore([1, 2]);
    withoutIndexSnapshots(dir);
    const lineOf = (offset: number) => lines.filter((line) => line.offset <= offset).length;
    const wrong: string[] = [];
    let flips = 0;
    for (let offset = 0; offset < bytes.length; offset++) {
      for (const mask of [0x01, 0x20, 0x80]) {
        const damaged = Buffer.from(bytes);
        flipBits(damaged, offset, mask);
        await writeFile(path, damaged);
        const outcome = await fileStore({ directory: dir, readOnly: true }).then(
          async (store) => {
            const events = await eventsOf(store, stream).catch((e: unknown) => e);
            await store.close();
            return { opened: events };
          },
          (e: unknown) => e,
        );
        const where = outcome instanceof CorruptionError ? `${outcome.file}:${outcome.line}` : `no CorruptionError at open (${String(outcome)})`;
        if (where !== `${path}:${lineOf(offset)}`) wrong.push(`flip ${mask} at byte ${offset} (line ${lineOf(offset)}): ${where}`);
        flips++;
      }
    }
    expect(flips).toBe(bytes.length * 3);
    expect(wrong).toEqual([]);
    // Nothing was rewritten by any of those opens.
    await writeFile(path, bytes);
    expect(await revisionsOf(dir, stream)).toEqual([1, 2, 3]);
  });

  it('a revision gap is corruption at the line after the gap', async () => {
    const dir = freshDir();
    const stream = randomStream();
    await withStore(dir, async (store) => {
      await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    });
    const path = segmentsOf(dir).at(-1) as string;
    await appendFile(path, frameLine(eventPayload(stream, 3, 10, new Date().toISOString(), 'A', undefined, false, '3')));
    const error = await openFails(dir);
    expect(error.file).toBe(path);
    expect(error.line).toBe(2);
    expect(error.message).toMatch(/revision 3 .*does not follow revision 1/);
  });

  it.each([['the last line'], ['a line with others after it']])('a $snapshot record whose identity names another stream is corruption (%s)', async (where) => {
    const dir = freshDir();
    const [a, b] = [randomStream('a'), randomStream('b')];
    await withStore(dir, async (store) => {
      for (const stream of [a, b]) {
        await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
        await store.compact(stream, { revision: 1, state: { of: stream }, identity: { stream, schemaVersion: 1 } });
      }
      if (where !== 'the last line') await store.append(a, [{ type: 'A', data: 2 }], { expectedRevision: 1 });
    });
    const snapshotB = logLines(dir).find((line) => line.payload.stream === b && line.payload.type === '$snapshot') as SegmentLine;
    const payload = snapshotB.bytes.toString('utf8', 65, snapshotB.bytes.length - 1);
    const forged = payload.replace(`"identity":{"stream":${JSON.stringify(b)}`, `"identity":{"stream":${JSON.stringify(a)}`);
    expect(forged).not.toBe(payload);
    await replaceLine(snapshotB, frameLine(forged));
    const error = await openFails(dir);
    expect(error.file).toBe(snapshotB.path);
    expect(error.line).toBe(snapshotB.line);
    expect(error.message).toMatch(/identity does not name stream/);
  });

  it.each([['the last line'], ['a line with others after it']])(
    'a line whose checksum matches but whose payload is not a record of the log is corruption (%s)',
    async (where) => {
      const dir = freshDir();
      const stream = randomStream();
      await withStore(dir, async (store) => {
        await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      });
      const path = segmentsOf(dir).at(-1) as string;
      await appendFile(path, frameLine(JSON.stringify({ hello: 'world' })));
      if (where !== 'the last line') await appendFile(path, frameLine(eventPayload(stream, 2, 2, new Date().toISOString(), 'A', undefined, false, '2')));
      const before = await readFile(path);
      const error = await openFails(dir);
      expect(error.file).toBe(path);
      expect(error.line).toBe(2);
      expect(await readFile(path)).toEqual(before);
    },
  );
});

describe('interrupted operations', () => {
  it('a deletion whose blob removal was cut short: the stream is gone and the blob left behind is owned by no stream', async () => {
    const dir = freshDir();
    const stream = randomStream();
    let sha = '';
    await withStore(dir, async (store) => {
      await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      sha = await store.putBlob(stream, new Uint8Array([1, 2, 3]));
    });
    await withStore(dir, (store) => store.deleteStream(stream, { expectedRevision: 1 }));
    // As if the process died after the $deleted line was durable, before the blob's file was removed.
    await writeFile(join(dir, 'blobs', sha), new Uint8Array([1, 2, 3]));
    for (const readOnly of [true, false]) {
      await withStore(
        dir,
        async (store) => {
          expect((await store.read(stream)).revision).toBe(0);
          expect(await collect(store.streams())).toEqual([]);
          expect(await store.getBlob(sha)).toBeUndefined();
          expect(await collect(store.blobs(stream))).toEqual([]);
          expect((await collect(store.readAll())).map((r) => r.type)).toEqual(['$deleted']);
        },
        readOnly,
      );
    }
  });

  it('leftover temporary files of an interrupted atomic write are removed by the next writer, never by a view', async () => {
    const dir = freshDir();
    await withStore(dir, async (store) => {
      await store.putBlob('s', new Uint8Array([1]));
    });
    const temps = [
      join(dir, 'blobs', `.${'a'.repeat(64)}.123.1.abcd.tmp`),
      join(dir, 'checkpoints', '.projection.123.1.abcd.tmp'),
      join(dir, 'index', '.00000000000000000009.json.123.1.abcd.tmp'),
      join(dir, 'log', '.00000000000000000001.jsonl.clean.tmp'),
    ];
    const { mkdirSync } = await import('node:fs');
    for (const temp of temps) {
      mkdirSync(join(temp, '..'), { recursive: true });
      await writeFile(temp, 'half');
    }
    await withStore(dir, async () => undefined, true);
    for (const temp of temps) expect((await stat(temp)).size, temp).toBe(4);
    await withStore(dir, async () => undefined);
    const left: string[] = [];
    for (const temp of temps)
      if (
        await stat(temp).then(
          () => true,
          () => false,
        )
      )
        left.push(temp);
    expect(left).toEqual([]);
  });
});

describe('positions survive restart, compaction and deletion', () => {
  it('the next position after a reopen continues past the largest in the log, $snapshot and $deleted records included', async () => {
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
    await withStore(dir, (store) => store.deleteStream(b, { expectedRevision: 1 }));
    // Once from the index snapshot the last close saved, once from the log alone.
    for (const snapshots of ['kept', 'removed']) {
      if (snapshots === 'removed') withoutIndexSnapshots(dir);
      await withStore(dir, async (store) => {
        const feed = await collect(store.readAll());
        expect(
          feed.map((r) => [r.type, r.position]),
          snapshots,
        ).toEqual([['$snapshot', 4], ['$deleted', 5], ...(snapshots === 'kept' ? [] : [['A', 6]])]);
        const appended = await store.append(a, [{ type: 'A', data: 3 }], { expectedRevision: 'any' });
        expect(appended.position, snapshots).toBe(snapshots === 'kept' ? 6 : 7);
      });
    }
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

describe('a segment torn before its first line', () => {
  it('a store whose only segment is all torn leaves the stream absent and appendable', async () => {
    const { dir, stream, path } = await writtenStore([1]);
    await writeFile(path, (await readFile(path)).subarray(0, 20));
    withoutIndexSnapshots(dir);
    await withStore(
      dir,
      async (store) => {
        expect((await store.read(stream)).revision).toBe(0);
        expect((await stat(path)).size, 'a view cuts nothing').toBe(20);
      },
      true,
    );
    await withStore(dir, async (store) => {
      expect((await store.read(stream)).revision).toBe(0);
      expect(await collect(store.streams())).toEqual([]);
      expect((await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' })).revision).toBe(1);
    });
    expect(await revisionsOf(dir, stream)).toEqual([1]);
  });

  it('a last segment that is all torn after sealed ones: the sealed ones read back and appends go on', async () => {
    segmentPerFlush();
    const { dir, stream, path } = await writtenStore([1, 1, 1]);
    await writeFile(path, (await readFile(path)).subarray(0, 20));
    withoutIndexSnapshots(dir);
    expect(await revisionsOf(dir, stream, true)).toEqual([1, 2]);
    await withStore(dir, async (store) => {
      expect((await store.append(stream, [{ type: 'A', data: 3 }], { expectedRevision: 2 })).position).toBe(3);
    });
    expect(await revisionsOf(dir, stream)).toEqual([1, 2, 3]);
  });
});

/** Replaces the line `line` in its segment with `text` (a whole framed line, newline included). */
async function replaceLine(line: SegmentLine, text: string): Promise<void> {
  const bytes = await readFile(line.path);
  await writeFile(line.path, Buffer.concat([bytes.subarray(0, line.offset), Buffer.from(text), bytes.subarray(line.offset + line.bytes.length)]));
}

/** Flips the bits of `mask` in byte `offset` of `bytes`. */
function flipBits(bytes: Buffer, offset: number, mask: number): void {
  bytes[offset] = (bytes[offset] as number) ^ mask;
}
