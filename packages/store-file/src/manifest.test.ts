import { copyFileSync, cpSync, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CorruptionError, InvalidInputError, StorageError, type EventStore, type StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { frameLine } from './journal-codec.js';
import { fileStore } from './index.js';
import { ChildOutput, ChildPool, collect, freshDir, randomStream, startChild, withoutCleanClose } from './test-support.fixture.js';

const manifestOf = (dir: string) => join(dir, 'manifest.json');
const cleanCloseOf = (dir: string) => join(dir, 'clean-close.json');
const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);

/** A file system that counts the stream files opened or read whole (journals, snapshots), those looked at (`lstat`), and the journal bytes read. */
function counting(options: { lstatSync?: boolean } = {}): { fs: Partial<FileSystem>; reads: string[]; stats: string[]; journalBytes: () => number } {
  const reads: string[] = [];
  const stats: string[] = [];
  const journals = new Set<number>();
  let journalBytes = 0;
  const note = (path: string) => {
    if (/[/\\]streams[/\\]/.test(path)) reads.push(path);
  };
  return {
    reads,
    stats,
    journalBytes: () => journalBytes,
    fs: {
      lstat: (path) => {
        // With the synchronous twin given, only it counts: a look through the other would go unseen.
        if (!options.lstatSync && /[/\\]streams[/\\]/.test(path)) stats.push(path);
        return nodeFileSystem.lstat(path);
      },
      ...(options.lstatSync
        ? {
            lstatSync: (path: string) => {
              if (/[/\\]streams[/\\]/.test(path)) stats.push(path);
              return nodeFileSystem.lstatSync?.(path);
            },
          }
        : {}),
      open: async (path, flags, mode) => {
        note(path);
        const fd = await nodeFileSystem.open(path, flags, mode);
        if (path.endsWith('.jsonl')) journals.add(fd);
        else journals.delete(fd);
        return fd;
      },
      read: async (fd, buffer, offset, length, position) => {
        const n = await nodeFileSystem.read(fd, buffer, offset, length, position);
        if (journals.has(fd)) journalBytes += n;
        return n;
      },
      readFile: (path) => {
        note(path);
        return nodeFileSystem.readFile(path);
      },
    },
  };
}

/** Everything a store shows: each stream read whole, the feed, the last position. */
async function contents(store: EventStore) {
  const streams: Record<string, unknown> = {};
  for await (const { stream } of store.streams()) {
    const read = await store.read(stream);
    streams[stream] = { revision: read.revision, snapshot: read.snapshot, events: await collect(read.events) };
  }
  const feed = await collect(store.readAll());
  return { streams, feed, lastPosition: feed[feed.length - 1]?.position ?? 0 };
}

/** What a full scan shows: the same directory copied without its manifest, opened read-only. */
async function fullScanOf(dir: string) {
  const copy = join(freshDir(), 'copy');
  cpSync(dir, copy, { recursive: true });
  rmSync(manifestOf(copy), { force: true });
  const view = await fileStore({ directory: copy, readOnly: true });
  try {
    return await contents(view);
  } finally {
    await view.close();
  }
}

/** Opens `dir` read-only with counted reads and returns what it shows and which stream files it read. */
async function viewWithReads(dir: string) {
  const { fs, reads, stats, journalBytes } = counting();
  const view = await fileStore({ directory: dir, readOnly: true, fs });
  const openReads = [...reads];
  const openStats = [...stats];
  const openBytes = journalBytes();
  try {
    return { shown: await contents(view), openReads, openStats, openBytes };
  } finally {
    await view.close();
  }
}

/** A store with a few streams (one compacted, with event ids), closed cleanly. */
async function seeded(dir: string): Promise<StreamId[]> {
  const streams = [randomStream('a'), randomStream('b'), randomStream('c')];
  const store = await fileStore({ directory: dir });
  for (const [n, stream] of streams.entries()) {
    for (let batch = 0; batch < 300; batch++) {
      await store.append(stream, [{ type: 'E', data: { n, batch }, eventId: `${stream}-${batch}` }], { expectedRevision: batch });
    }
  }
  await store.compact(streams[1] as StreamId, { revision: 100, state: { upTo: 100 }, identity: { stream: streams[1] as StreamId, schemaVersion: 1 } });
  await store.close();
  return streams;
}

describe('the manifest', () => {
  it('lets a clean reopen read no stream file at all, and a reopen after appends read only the journals that grew', async () => {
    const dir = freshDir();
    const [a, b] = await seeded(dir);
    const first = await viewWithReads(dir);
    expect(first.openReads).toEqual([]);
    // After a clean close no stream file is even looked at: the clean-close mark vouches for them all.
    expect(first.openStats).toEqual([]);
    expect(first.shown).toEqual(await fullScanOf(dir));

    // A writer that has not closed yet (as after a crash): its appends are past the manifest.
    const writer = await fileStore({ directory: dir });
    expect(existsSync(cleanCloseOf(dir))).toBe(false);
    await writer.append(a as StreamId, [{ type: 'E', data: 'late' }], { expectedRevision: 300 });
    const second = await viewWithReads(dir);
    expect(second.openReads).toEqual([journalOf(dir, a as StreamId)]);
    expect(second.openStats.length).toBeGreaterThanOrEqual(3);
    expect(second.shown).toEqual(await fullScanOf(dir));
    await writer.close();
    expect((await viewWithReads(dir)).openReads).toEqual([]);
    expect(b).toBeDefined();
  });

  it('is recorded in the background by a writer that keeps running, once 10,000 positions settled', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const writer = await fileStore({ directory: dir });
    try {
      for (let batch = 0; batch < 101; batch++) {
        await writer.append(
          stream,
          Array.from({ length: 100 }, (_, i) => ({ type: 'E', data: { batch, i } })),
          { expectedRevision: 'any' },
        );
      }
      for (let tries = 0; tries < 400 && !existsSync(manifestOf(dir)); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(existsSync(manifestOf(dir))).toBe(true);
      await writer.append(stream, [{ type: 'E', data: 'after' }], { expectedRevision: 'any' });
      // A view opened now reads the journal from the last checkpoint before the manifest's end, not whole.
      const { shown, openBytes } = await viewWithReads(dir);
      expect(shown.feed).toHaveLength(10_101);
      expect(openBytes).toBeLessThan(statSync(journalOf(dir, stream)).size / 10);
    } finally {
      await writer.close();
    }
  });

  it('keeps idempotent appends: a retried event id is recognised after a reopen from the manifest', async () => {
    const dir = freshDir();
    const [a, b] = (await seeded(dir)) as [StreamId, StreamId];
    const { fs, reads } = counting();
    const store = await fileStore({ directory: dir, fs });
    try {
      expect(reads).toEqual([]);
      const before = await store.read(a);
      const tenth = (await collect(before.events))[9];
      const retried = await store.append(a, [{ type: 'E', data: 'again', eventId: `${a}-9` }], { expectedRevision: 'any' });
      expect(retried).toEqual({ revision: 10, position: tenth?.position });
      // The ids were read from the journal for that first append with an id.
      expect(reads.filter((path) => path === journalOf(dir, a))).toHaveLength(2);
      await expect(
        store.append(
          a,
          [
            { type: 'E', data: 'new', eventId: 'fresh' },
            { type: 'E', data: 'dup', eventId: `${a}-20` },
          ],
          { expectedRevision: 'any' },
        ),
      ).rejects.toBeInstanceOf(InvalidInputError);
      // Ids the snapshot covers are gone from the compacted stream; later ones are still recognised.
      const kept = await store.append(b, [{ type: 'E', data: 'again', eventId: `${b}-200` }], { expectedRevision: 'any' });
      expect(kept.revision).toBe(201);
      expect((await store.read(a)).revision).toBe(300);
    } finally {
      await store.close();
    }
  });

  it.each([
    ['a flipped byte', (bytes: Buffer) => Buffer.from(bytes.map((byte, i) => (i === Math.floor(bytes.length / 2) ? byte ^ 1 : byte)))],
    ['a truncation', (bytes: Buffer) => bytes.subarray(0, Math.floor(bytes.length / 2))],
    [
      'another manifest version',
      (bytes: Buffer) => {
        const payload = JSON.parse(bytes.toString('utf8').slice(65)) as { manifestVersion: number };
        return Buffer.from(frameLine(JSON.stringify({ ...payload, manifestVersion: 0 })));
      },
    ],
  ])('is ignored after %s: the store reads as a full scan shows it', async (_, damage) => {
    const dir = freshDir();
    await seeded(dir);
    expect((await viewWithReads(dir)).openReads).toEqual([]);
    writeFileSync(manifestOf(dir), damage(readFileSync(manifestOf(dir))));
    const { shown, openReads } = await viewWithReads(dir);
    expect(openReads.length).toBeGreaterThan(0);
    expect(shown).toEqual(await fullScanOf(dir));
    const writer = await fileStore({ directory: dir });
    expect(await contents(writer)).toEqual(shown);
    await writer.close();
  });

  it('an older manifest is checked against the files: appended, compacted, deleted and new streams read as a full scan shows them', async () => {
    const dir = freshDir();
    const [a, b, c] = (await seeded(dir)) as [StreamId, StreamId, StreamId];
    expect((await viewWithReads(dir)).openReads).toEqual([]);
    const old = readFileSync(manifestOf(dir));
    const store = await fileStore({ directory: dir });
    const d = randomStream('d');
    await store.append(a, [{ type: 'E', data: 'more' }], { expectedRevision: 300 });
    await store.compact(b, { revision: 250, state: { upTo: 250 }, identity: { stream: b, schemaVersion: 1 } });
    await store.deleteStream(c, { expectedRevision: 300 });
    await store.append(d, [{ type: 'E', data: 'new' }], { expectedRevision: 'no_stream' });
    await store.close();
    writeFileSync(manifestOf(dir), old);
    const { shown } = await viewWithReads(dir);
    expect(shown).toEqual(await fullScanOf(dir));
    expect(Object.keys(shown.streams).sort()).toEqual([a, b, d].sort());
    const writer = await fileStore({ directory: dir });
    expect(await contents(writer)).toEqual(shown);
    // Positions go on after every one the files hold, and idempotency holds for the stream appended past the manifest.
    const next = await writer.append(d, [{ type: 'E', data: 'after' }], { expectedRevision: 1 });
    expect(next.position).toBe(shown.lastPosition + 1);
    expect((await writer.append(a, [{ type: 'E', data: 'x', eventId: `${a}-299` }], { expectedRevision: 'any' })).revision).toBe(300);
    await writer.close();
  });

  it('works for a copy of the directory (other inodes), reading only the end of each journal', async () => {
    const dir = freshDir();
    await seeded(dir);
    const copy = join(freshDir(), 'copy');
    cpSync(dir, copy, { recursive: true });
    const { shown, openReads, openBytes } = await viewWithReads(copy);
    expect(shown).toEqual(await fullScanOf(dir));
    // Each journal is read again from its last checkpoint (revision 256 of 300) on, not whole.
    const journals = openReads.filter((path) => path.endsWith('.jsonl'));
    expect(journals.length).toBe(3);
    const total = journals.reduce((sum, path) => sum + statSync(path).size, 0);
    expect(openBytes).toBeGreaterThan(0);
    expect(openBytes).toBeLessThan(total / 3);
  });

  it('checks a journal swapped for another of the same size while the store was open or crashed; after a clean close, the read finds it', async () => {
    const clock = () => new Date('2026-01-01T00:00:00.000Z');
    const [dir, other] = [freshDir(), freshDir()];
    const stream = randomStream('s');
    for (const [where, letter] of [
      [dir, 'x'],
      [other, 'y'],
    ] as const) {
      const store = await fileStore({ directory: where, clock });
      for (let i = 0; i < 5; i++) await store.append(stream, [{ type: 'E', data: letter.repeat(10) }], { expectedRevision: i });
      await store.close();
    }
    expect(statSync(journalOf(other, stream)).size).toBe(statSync(journalOf(dir, stream)).size);
    expect((await viewWithReads(dir)).openReads).toEqual([]);
    const original = readFileSync(journalOf(dir, stream));
    // In place (same inode, another time), after a crash: open sees the other time and reads the journal ...
    copyFileSync(journalOf(other, stream), journalOf(dir, stream));
    withoutCleanClose(dir);
    let shown = (await viewWithReads(dir)).shown;
    expect(shown).toEqual(await fullScanOf(dir));
    expect(shown.feed.map((record) => record.data)).toEqual(Array(5).fill('y'.repeat(10)));
    // ... and by rename (another inode), after a writer recorded the swapped journal and crashed.
    await (await fileStore({ directory: dir })).close();
    writeFileSync(`${journalOf(dir, stream)}.new`, original);
    renameSync(`${journalOf(dir, stream)}.new`, journalOf(dir, stream));
    withoutCleanClose(dir);
    shown = (await viewWithReads(dir)).shown;
    expect(shown).toEqual(await fullScanOf(dir));
    expect(shown.feed.map((record) => record.data)).toEqual(Array(5).fill('x'.repeat(10)));
    // After a clean close open does not look: a read-only view's read finds the journal is not the file it knows.
    await (await fileStore({ directory: dir })).close();
    writeFileSync(`${journalOf(dir, stream)}.new`, readFileSync(journalOf(other, stream)));
    renameSync(`${journalOf(dir, stream)}.new`, journalOf(dir, stream));
    const view = await fileStore({ directory: dir, readOnly: true });
    await expect(collect(view.readAll())).rejects.toThrow(/replaced/);
    await view.close();
  });

  it('after a clean close, takes the files as recorded: a journal changed meanwhile is found by the read, verify() and the first append', async () => {
    const dir = freshDir();
    const [a, b] = (await seeded(dir)) as [StreamId, StreamId];
    // A flipped byte in a's first line, and b one line shorter.
    const aText = readFileSync(journalOf(dir, a), 'latin1');
    writeFileSync(journalOf(dir, a), aText.replace('"batch":0', '"batch":9'), 'latin1');
    const bLines = readFileSync(journalOf(dir, b), 'utf8').split('\n');
    writeFileSync(journalOf(dir, b), `${bLines.slice(0, -2).join('\n')}\n`);
    const { fs, stats } = counting();
    const writer = await fileStore({ directory: dir, fs });
    try {
      expect(stats).toEqual([]);
      // The shortened journal is not written at a length it no longer has: the first append finds it.
      await expect(writer.append(b, [{ type: 'E', data: 'late' }], { expectedRevision: 'any' })).rejects.toBeInstanceOf(CorruptionError);
      await expect(collect((await writer.read(a)).events)).rejects.toBeInstanceOf(CorruptionError);
      const report = await writer.verify!();
      expect(report.ok).toBe(false);
      expect(JSON.stringify(report)).toContain(journalOf(dir, a));
      await expect(writer.append(a, [{ type: 'E', data: 'late' }], { expectedRevision: 'any' })).rejects.toBeInstanceOf(StorageError);
    } finally {
      await writer.close();
    }
    // The damage found refused writes: the close left no mark, so the next open looks at the files again.
    expect(existsSync(cleanCloseOf(dir))).toBe(false);
    const looked = counting();
    await (await fileStore({ directory: dir, readOnly: true, fs: looked.fs })).close();
    expect(looked.stats.length).toBeGreaterThan(0);
  });

  it('is ignored when a field is out of range, though its checksum holds: the store reads as a full scan shows it', async () => {
    const dir = freshDir();
    await seeded(dir);
    const payload = JSON.parse(readFileSync(manifestOf(dir), 'utf8').slice(65)) as { journals: number[] };
    // The first journal's live offset past its length.
    payload.journals[3] = (payload.journals[0] as number) + 1;
    writeFileSync(manifestOf(dir), frameLine(JSON.stringify(payload)));
    const { shown, openReads } = await viewWithReads(dir);
    expect(openReads.length).toBeGreaterThan(0);
    expect(shown).toEqual(await fullScanOf(dir));
  });

  it('of the earlier version (one row per stream) is read as before: no stream file is read', async () => {
    const dir = freshDir();
    await seeded(dir);
    const columns = JSON.parse(readFileSync(manifestOf(dir), 'utf8').slice(65)) as {
      formatVersion: number;
      position: number;
      streams: string[];
      journals: number[];
      checkpoints: number[];
      stamps: string;
      hashes: string;
      snapshots: [number, number, number, string, number, number, number][];
    };
    const stamps = Buffer.from(columns.stamps, 'base64');
    const hashes = Buffer.from(columns.hashes, 'base64');
    // The same streams as version 1 wrote them: [stream, snapshot row | 0, journal row | 0].
    let checkpoint = 0;
    const rows = columns.streams.map((stream, row) => {
      const snapshot = columns.snapshots.find((entry) => entry[0] === row);
      const j = columns.journals.slice(row * 9, row * 9 + 9);
      const checkpoints = columns.checkpoints.slice(checkpoint, (checkpoint += 4 * (j[8] as number)));
      const [ino, mtimeMs] = [stamps.readDoubleLE(row * 16), stamps.readDoubleLE(row * 16 + 8)];
      const hash = hashes.toString('hex', row * 32, row * 32 + 32);
      const journal = [...j.slice(0, 8), ino, mtimeMs, checkpoints, /^0+$/.test(hash) ? '' : hash];
      return [stream, snapshot ? snapshot.slice(1) : 0, j[0] === -1 ? 0 : journal];
    });
    const { formatVersion, position } = columns;
    writeFileSync(
      manifestOf(dir),
      frameLine(JSON.stringify({ format: 'sessionfold.file-store-manifest', manifestVersion: 1, formatVersion, position, streams: rows })),
    );
    const { shown, openReads } = await viewWithReads(dir);
    expect(openReads).toEqual([]);
    expect(shown).toEqual(await fullScanOf(dir));
  });

  it.each([
    ['the asynchronous lstat', false],
    ['the synchronous lstat, a slice at a time', true],
  ])('is recorded again in the background looking only at the files changed since, and at close looking at all (%s)', async (_, lstatSync) => {
    const dir = freshDir();
    const { fs, stats } = counting({ lstatSync });
    const writer = await fileStore({ directory: dir, fs });
    const [a, b, c] = [randomStream('a'), randomStream('b'), randomStream('c')];
    const journals = (...streams: StreamId[]) => streams.map((stream) => journalOf(dir, stream)).sort();
    const looked = async (count: number) => {
      for (let waited = 0; stats.length < count && waited < 5000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 50));
      return stats.splice(0).sort();
    };
    const many = (from: number) => Array.from({ length: 10_000 }, (_, n) => ({ type: 'E', data: from + n }));
    for (const stream of [a, b]) await writer.append(stream, [{ type: 'E', data: 1 }], { expectedRevision: 'no_stream' });
    // Ten thousand positions past the last recording start the next one in the background.
    await writer.append(c, many(0), { expectedRevision: 'no_stream' });
    expect(await looked(3)).toEqual(journals(a, b, c));
    await writer.append(b, [{ type: 'E', data: 2 }], { expectedRevision: 1 });
    await writer.append(c, many(10_000), { expectedRevision: 10_000 });
    // Only the journals that grew are looked at again; a keeps the stamp found before.
    expect(await looked(2)).toEqual(journals(b, c));
    await writer.close();
    // The recording the clean-close mark vouches for looks at every file it records.
    expect(stats.sort()).toEqual(journals(a, b, c));
    const { shown, openReads } = await viewWithReads(dir);
    expect(openReads).toEqual([]);
    expect(shown).toEqual(await fullScanOf(dir));
  });

  it("is recorded at a writer's close looking only at the files of the streams used since open", async () => {
    const dir = freshDir();
    const [a, b] = (await seeded(dir)) as [StreamId, StreamId];
    const { fs, stats } = counting();
    const writer = await fileStore({ directory: dir, fs });
    await writer.append(a, [{ type: 'E', data: 'late' }], { expectedRevision: 300 });
    await writer.close();
    expect(stats).toEqual([journalOf(dir, a)]);
    expect(existsSync(cleanCloseOf(dir))).toBe(true);
    const { shown, openReads } = await viewWithReads(dir);
    expect(openReads).toEqual([]);
    expect(shown).toEqual(await fullScanOf(dir));
    expect((shown.streams[b] as { revision: number }).revision).toBe(300);
  });

  it('reopens the stores of release 0.1.0 from its manifest as before', async () => {
    const dir = join(freshDir(), 'store');
    cpSync(fileURLToPath(new URL('./fixtures/release-0.1.0', import.meta.url)), dir, { recursive: true });
    const writer = await fileStore({ directory: dir });
    const before = await contents(writer);
    await writer.close();
    const { shown, openReads } = await viewWithReads(dir);
    expect(openReads).toEqual([]);
    expect(shown).toEqual(before);
  });
});

describe('after SIGKILL of a writer between manifests', () => {
  it('every acknowledged batch is there, positions go on uniquely and retried event ids are recognised', async () => {
    const dir = freshDir();
    const streams = [randomStream('a'), randomStream('b')];
    const pool = new ChildPool(() => new ChildOutput(startChild('appender', [])), 2);
    const acks: { stream: StreamId; run: string; w: number; batch: number; size: number; revision: number }[] = [];
    try {
      for (let kill = 0; kill < 6; kill++) {
        const child = pool.take();
        child.child.stdin?.write(`go ${dir} ${streams.join(',')} 4\n`);
        const run = (await child.waitFor((line) => line.startsWith('open '))).split(' ')[1] as string;
        // Enough acknowledged appends that each journal grows past the manifest the last writer left.
        await child.waitFor((line) => line.startsWith('ack ') && Number(line.split(' ')[3]) >= 60);
        await child.kill();
        // The killed writer removed the mark of the last clean close at its open: nothing vouches for the files now.
        expect(existsSync(cleanCloseOf(dir))).toBe(false);
        for (const line of child.lines.filter((l) => l.startsWith('ack '))) {
          const [, stream, w, batch, size, revision] = line.split(' ');
          acks.push({ stream: stream as StreamId, run, w: Number(w), batch: Number(batch), size: Number(size), revision: Number(revision) });
        }
        // The writer's open reads the manifest and the tails past it, cutting what the kill tore.
        const { fs, stats, journalBytes } = counting();
        const writer = await fileStore({ directory: dir, fs });
        const openBytes = journalBytes();
        // Every journal was looked at again.
        expect(new Set(stats.filter((path) => path.endsWith('.jsonl')))).toEqual(new Set(streams.map((stream) => journalOf(dir, stream))));
        try {
          const shown = await contents(writer);
          // Not every journal line was read again: what the manifest recorded is taken from it.
          const total = streams.reduce((sum, stream) => sum + statSync(journalOf(dir, stream)).size, 0);
          if (kill > 0) expect(openBytes).toBeLessThan(total);
          expect(shown).toEqual(await fullScanOf(dir));
          for (const ack of acks) {
            const events = (shown.streams[ack.stream] as { events: { data: unknown }[] }).events;
            expect(events[ack.revision - 1]?.data, `acknowledged ${ack.stream}@${ack.revision}`).toMatchObject({
              run: ack.run,
              w: ack.w,
              batch: ack.batch,
              i: ack.size - 1,
            });
          }
          const positions = shown.feed.map((record) => record.position);
          expect(new Set(positions).size).toBe(positions.length);
          expect(positions).toEqual([...positions].sort((x, y) => x - y));
          // Retries are answered with their first result: batches of this run (past the manifest) and of every earlier one (in it).
          for (const ack of acks.filter((a) => (a.run === run && a.batch === 60) || (a.w >= 0 && a.batch === 0))) {
            const retry = Array.from({ length: ack.size }, (_, i) => ({ type: 'Step', data: null, eventId: `${ack.run}-${ack.w}-${ack.batch}-${i}` }));
            expect((await writer.append(ack.stream, retry, { expectedRevision: 'any' })).revision).toBe(ack.revision);
          }
          const next = await writer.append(streams[0] as StreamId, [{ type: 'Between', data: { run: 'parent', w: -1, batch: kill, i: 0 } }], {
            expectedRevision: 'any',
          });
          expect(next.position).toBeGreaterThan(Math.max(...positions));
          acks.push({ stream: streams[0] as StreamId, run: 'parent', w: -1, batch: kill, size: 1, revision: next.revision });
        } finally {
          // A clean close: the next child starts from a fresh manifest, and removes the mark it leaves.
          await writer.close();
          expect(existsSync(cleanCloseOf(dir))).toBe(true);
        }
      }
    } finally {
      await pool.dispose();
    }
  });
});

describe("a read-only view's follow", () => {
  it('reads again only the journals the writer changed since its last read', async () => {
    const dir = freshDir();
    const streams = Array.from({ length: 30 }, (_, i) => randomStream(`f${i}`));
    const writer = await fileStore({ directory: dir });
    const { fs, reads } = counting();
    const view = await fileStore({ directory: dir, readOnly: true, fs });
    const controller = new AbortController();
    if (!view.follow) throw new Error('a file store follows');
    const follower = view.follow({ fromPosition: 1, signal: controller.signal })[Symbol.asyncIterator]();
    try {
      for (const stream of streams) await writer.append(stream, [{ type: 'E', data: stream }], { expectedRevision: 'no_stream' });
      for (let i = 0; i < streams.length; i++) await follower.next();
      reads.splice(0);
      const changed = streams[7] as StreamId;
      await writer.append(changed, [{ type: 'E', data: 'later' }], { expectedRevision: 1 });
      const next = await follower.next();
      expect(next.value).toMatchObject({ streamId: changed, revision: 2, data: 'later' });
      const journals = reads.filter((path) => path.endsWith('.jsonl'));
      expect(journals.length).toBeGreaterThan(0);
      expect(new Set(journals)).toEqual(new Set([journalOf(dir, changed)]));
    } finally {
      controller.abort();
      await follower.return?.();
      await view.close();
      await writer.close();
    }
  });
});
