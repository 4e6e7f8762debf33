import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyStore, CorruptionError, memoryStore, StorageError } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { frameLine } from './journal-codec.js';
import { collect, freshDir, linesOf, logLines, randomStream, segmentsOf, withoutIndexSnapshots } from './test-support.fixture.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });
/** The blob-owner lines of `stream` in the log, as the blobs they name. */
const ownerLinesOf = (dir: string, stream: string) =>
  linesOf(dir, stream).flatMap((line) => (typeof line.payload.blob === 'string' ? [line.payload.blob] : []));

describe('blobs', () => {
  it('put, get, blobs(stream): the owner is a line of the log, the bytes a file named by their sha256', async () => {
    const dir = freshDir();
    const [s, t] = [randomStream('s'), randomStream('t')];
    const store = await fileStore({ directory: dir });
    const bytes = new TextEncoder().encode('attachment');
    const sha = await store.putBlob(s, bytes);
    expect(sha).toBe(sha256(bytes));
    expect(await store.putBlob(s, bytes), 'stored again: the same name, no second owner line').toBe(sha);
    expect(await store.getBlob(sha)).toEqual(bytes);
    expect(await collect(store.blobs(s))).toEqual([sha]);
    expect(await collect(store.blobs(t))).toEqual([]);
    expect(await store.getBlob(sha256(new Uint8Array([0])))).toBeUndefined();
    expect(await readFile(join(dir, 'blobs', sha))).toEqual(Buffer.from(bytes));
    expect(ownerLinesOf(dir, s)).toEqual([sha]);
    await store.close();
  });

  it('a blob whose bytes changed on disk is reported as corruption, never returned', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const sha = await store.putBlob(randomStream(), new TextEncoder().encode('attachment'));
    const path = join(realpathSync(dir), 'blobs', sha);
    const bytes = await readFile(path);
    bytes[0] = (bytes[0] as number) ^ 0x01;
    await writeFile(path, bytes);
    const error = await store.getBlob(sha).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptionError);
    expect((error as CorruptionError).file).toBe(path);
    await store.close();
  });

  it('a damaged blob fails only its own read: the store keeps writing and reading everything else', async () => {
    const dir = freshDir();
    const [s, t] = [randomStream('s'), randomStream('t')];
    let store = await fileStore({ directory: dir });
    const damaged = await store.putBlob(s, new Uint8Array([1, 2, 3]));
    const healthy = await store.putBlob(s, new Uint8Array([4, 5, 6]));
    await store.close();
    await writeFile(join(dir, 'blobs', damaged), new Uint8Array([1, 2, 4]));

    store = await fileStore({ directory: dir });
    await expect(store.getBlob(damaged)).rejects.toBeInstanceOf(CorruptionError);
    expect(await store.getBlob(healthy)).toEqual(new Uint8Array([4, 5, 6]));
    await store.append(t, [{ type: 'After', data: 1 }], { expectedRevision: 'no_stream' });
    const later = await store.putBlob(t, new Uint8Array([7]));
    expect(await store.getBlob(later)).toEqual(new Uint8Array([7]));
    await store.compact(t, { revision: 1, state: 1, identity: { stream: t, schemaVersion: 1 } });
    await expect(store.getBlob(damaged)).rejects.toBeInstanceOf(CorruptionError);
    expect((await store.status()).details?.writesRefused ?? null).toBeNull();
    await store.close();

    const view = await fileStore({ directory: dir, readOnly: true });
    await expect(view.getBlob(damaged)).rejects.toBeInstanceOf(CorruptionError);
    expect(await view.getBlob(later)).toEqual(new Uint8Array([7]));
    await view.close();
  });

  it('a blob shared by two streams outlives the first deletion and goes with the last, across restarts', async () => {
    const dir = freshDir();
    const [a, b] = [randomStream('a'), randomStream('b')];
    let store = await fileStore({ directory: dir });
    for (const stream of [a, b]) await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const shared = await store.putBlob(a, new Uint8Array([1, 2, 3]));
    expect(await store.putBlob(b, new Uint8Array([1, 2, 3]))).toBe(shared);
    const own = await store.putBlob(a, new Uint8Array([4]));
    await store.close();

    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(a))).toEqual([shared, own].sort());
    await store.deleteStream(a, { expectedRevision: 1 });
    expect(await store.getBlob(own)).toBeUndefined();
    await expect(stat(join(dir, 'blobs', own))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await store.getBlob(shared)).toEqual(new Uint8Array([1, 2, 3]));
    expect(await collect(store.blobs(a))).toEqual([]);
    await store.close();

    // Read from scratch (no index snapshot), the log says the same.
    withoutIndexSnapshots(dir);
    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(a))).toEqual([]);
    expect(await collect(store.blobs(b))).toEqual([shared]);
    await store.deleteStream(b, { expectedRevision: 1 });
    expect(await store.getBlob(shared)).toBeUndefined();
    await expect(stat(join(dir, 'blobs', shared))).rejects.toMatchObject({ code: 'ENOENT' });
    await store.close();
  });

  it('a blob file nobody owns is kept by the next writer, never deleted on open, and verify names it an orphan', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const owned = await store.putBlob(randomStream(), new Uint8Array([1]));
    await store.close();
    const bytes = new Uint8Array([7, 7, 7]);
    await writeFile(join(dir, 'blobs', sha256(bytes)), bytes);

    const reopened = await fileStore({ directory: dir });
    const report = await reopened.verify();
    await reopened.close();
    expect(report.ok).toBe(true);
    expect(report.problems.map((p) => [p.severity, p.code, p.file])).toEqual([['warning', 'blob_orphan', join(realpathSync(dir), 'blobs', sha256(bytes))]]);
    expect(report.problems.some((p) => p.file?.endsWith(owned))).toBe(false);
    expect(await readFile(join(dir, 'blobs', sha256(bytes)))).toEqual(Buffer.from(bytes));
  });

  it('an owner line whose blob never made it is not listed, by a writer or a read-only view (copied past), even once another stream stores the same bytes', async () => {
    const dir = freshDir();
    const [s, t] = [randomStream('s'), randomStream('t')];
    let store = await fileStore({ directory: dir });
    await store.append(s, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const kept = await store.putBlob(s, new Uint8Array([1]));
    await store.close();
    // What a crash between the owner line and the blob file leaves behind.
    const lost = new Uint8Array([2, 2]);
    appendFileSync(segmentsOf(dir).at(-1) as string, frameLine(JSON.stringify({ stream: s, blob: sha256(lost) })));
    const before = readFileSync(segmentsOf(dir).at(-1) as string);

    const view = await fileStore({ directory: dir, readOnly: true });
    expect(await collect(view.blobs(s))).toEqual([kept]);
    const copy = memoryStore();
    expect(await copyStore(view, copy)).toMatchObject({ blobs: 1 });
    expect(await collect(copy.blobs(s))).toEqual([kept]);
    expect(await copy.getBlob(kept)).toEqual(new Uint8Array([1]));
    await view.close();
    expect(readFileSync(segmentsOf(dir).at(-1) as string), 'a view changes nothing').toEqual(before);

    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(s))).toEqual([kept]);
    // Once the same bytes are stored for another stream, the put `s` never finished must not show for `s`.
    await store.putBlob(t, lost);
    expect(await collect(store.blobs(s))).toEqual([kept]);
    await store.close();
    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(s))).toEqual([kept]);
    expect(await collect(store.blobs(t))).toEqual([sha256(lost)]);
    await store.close();
  });

  it('copyStore carries every stream’s blobs to another store', async () => {
    const dir = freshDir();
    const [s, t] = [randomStream('s'), randomStream('t')];
    const store = await fileStore({ directory: dir });
    await store.append(s, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.append(t, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const ofS = [await store.putBlob(s, new Uint8Array([1])), await store.putBlob(s, new Uint8Array([2, 2]))].sort();
    const ofT = [await store.putBlob(t, new Uint8Array([1]))];
    const copy = memoryStore();
    expect(await copyStore(store, copy)).toMatchObject({ streams: 2, blobs: 3 });
    expect(await collect(copy.blobs(s))).toEqual(ofS);
    expect(await collect(copy.blobs(t))).toEqual(ofT);
    expect(await copy.getBlob(ofS[1] as string)).toEqual(await store.getBlob(ofS[1] as string));
    await store.close();
    // And into another file store.
    const target = await fileStore({ directory: freshDir() });
    await copyStore(copy, target);
    expect(await collect(target.blobs(s))).toEqual(ofS);
    expect(await target.getBlob(ofT[0] as string)).toEqual(new Uint8Array([1]));
    await target.close();
  });

  it('the owner is recorded before the blob: when the owner line cannot be made durable, no blob is written', async () => {
    const dir = freshDir();
    const s = randomStream();
    const fs: Partial<FileSystem> = {
      fdatasync: async () => {
        throw errno('EIO');
      },
    };
    const store = await fileStore({ directory: dir, fs });
    const bytes = new Uint8Array([3, 1, 4]);
    await expect(store.putBlob(s, bytes)).rejects.toBeInstanceOf(StorageError);
    await store.close();
    await expect(stat(join(dir, 'blobs', sha256(bytes)))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('the owner line is in the log, durable, before the blob file is created', async () => {
    const dir = freshDir();
    const s = randomStream();
    let ownerLinesAtBlobOpen: string[] | undefined;
    const fs: Partial<FileSystem> = {
      open: async (path, flags, mode) => {
        if (path.includes('/blobs/') && flags !== 'r' && ownerLinesAtBlobOpen === undefined) ownerLinesAtBlobOpen = ownerLinesOf(dir, s);
        return nodeFileSystem.open(path, flags, mode);
      },
    };
    const store = await fileStore({ directory: dir, fs });
    const sha = await store.putBlob(s, new Uint8Array([5, 5]));
    await store.close();
    expect(ownerLinesAtBlobOpen).toEqual([sha]);
  });

  it.each([
    [
      'a blob',
      (dir: string, path: string) => path.startsWith(join(dir, 'blobs')),
      (_dir: string) => /^Could not write blob .*: the disk is full \(ENOSPC\)\.$/,
    ],
    [
      "a blob's owner line",
      (_dir: string, path: string) => /\/log\/\d{20}\.jsonl$/.test(path),
      (dir: string) => new RegExp(`^Could not write to ${join(dir, 'log')}/\\d{20}\\.jsonl: the disk is full \\(ENOSPC\\)\\.$`),
    ],
  ])('%s that does not fit on a full disk says the disk is full', async (_, full, message) => {
    const dir = realpathSync(freshDir());
    const fullFds = new Set<number>();
    let armed = false;
    const fs: Partial<FileSystem> = {
      open: async (path, flags, mode) => {
        const fd = await nodeFileSystem.open(path, flags, mode);
        if (full(dir, path) && flags !== 'r') fullFds.add(fd);
        return fd;
      },
      write: async (fd, buffer, offset, length, position) => {
        if (armed && fullFds.has(fd)) throw errno('ENOSPC');
        return nodeFileSystem.write(fd, buffer, offset, length, position);
      },
    };
    const store = await fileStore({ directory: dir, fs });
    const s = randomStream();
    await store.append(s, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    armed = true;
    const bytes = new Uint8Array([1, 6, 1, 8]);
    const failed = await store.putBlob(s, bytes).catch((error: unknown) => error);
    armed = false;
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).message).toMatch(message(dir));
    expect((failed as StorageError).poisoned).toBe(false);
    // The store goes on: the same blob stored again is there.
    expect(await store.putBlob(s, bytes)).toBe(sha256(bytes));
    expect(await store.getBlob(sha256(bytes))).toEqual(bytes);
    await store.close();
  });

  it('when the blob cannot be written after its owner line, the stream does not list it, even once another stream stores the same bytes', async () => {
    const dir = freshDir();
    const [s, t] = [randomStream('s'), randomStream('t')];
    const faults = { renames: 1 };
    const fs: Partial<FileSystem> = {
      rename: async (from, to) => {
        if (to.includes(`${join(realpathSync(dir), 'blobs')}`) && faults.renames > 0) {
          faults.renames--;
          throw errno('EIO');
        }
        return nodeFileSystem.rename(from, to);
      },
    };
    let store = await fileStore({ directory: dir, fs });
    const bytes = new Uint8Array([2, 7, 1, 8]);
    await expect(store.putBlob(s, bytes)).rejects.toBeInstanceOf(StorageError);
    expect(faults.renames, 'the fault was met').toBe(0);
    expect(await collect(store.blobs(s))).toEqual([]);
    expect(await store.getBlob(sha256(bytes))).toBeUndefined();
    expect(await store.putBlob(t, bytes)).toBe(sha256(bytes));
    expect(await collect(store.blobs(s))).toEqual([]);
    await store.close();

    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(s))).toEqual([]);
    expect(await collect(store.blobs(t))).toEqual([sha256(bytes)]);
    await store.close();
  });

  it('a damaged owner line is a CorruptionError naming the segment and line, for a writer and a read-only view', async () => {
    const dir = realpathSync(freshDir());
    const s = randomStream();
    const store = await fileStore({ directory: dir });
    await store.append(s, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.putBlob(s, new Uint8Array([1]));
    await store.putBlob(s, new Uint8Array([2]));
    await store.close();
    const owner = logLines(dir).find((line) => typeof line.payload.blob === 'string');
    expect(owner?.line).toBe(2);
    const { path, offset } = owner as { path: string; offset: number };
    const bytes = readFileSync(path);
    // A flipped character of the sha256 it names; a whole line follows it, so it is no torn tail.
    const at = offset + 65 + bytes.subarray(offset + 65).indexOf('"blob":"') + 8;
    bytes[at] = bytes[at] === 0x61 ? 0x62 : 0x61;
    writeFileSync(path, bytes);
    withoutIndexSnapshots(dir);

    for (const readOnly of [true, false]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptionError);
      expect((error as CorruptionError).file).toBe(path);
      expect((error as CorruptionError).line).toBe(2);
    }
  });
});
