import { createHash } from 'node:crypto';
import { appendFile, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyStore, CorruptionError, memoryStore, StorageError } from '@sessionfold/core/kernel';
import { BlobStore } from './blob-store.js';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { frameLine } from './journal-codec.js';
import { Layout } from './layout.js';
import { collect, freshDir, randomStream } from './test-support.fixture.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const errno = (code: string) => Object.assign(new Error(`${code}: injected`), { code });
const ownersFile = (dir: string, stream: string) => join(dir, 'owners', `${stream}.jsonl`);

describe('blobs', () => {
  it('a blob whose bytes changed on disk is reported as corruption, never returned', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const sha = await store.putBlob(randomStream(), new TextEncoder().encode('attachment'));
    const path = join(dir, 'blobs', sha);
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
    await store.close();

    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(b))).toEqual([shared]);
    await store.deleteStream(b, { expectedRevision: 1 });
    expect(await store.getBlob(shared)).toBeUndefined();
    await store.close();
  });

  it('a blob whose owners file went missing is kept by the next writer, never deleted on open', async () => {
    const dir = freshDir();
    let store = await fileStore({ directory: dir });
    const sha = await store.putBlob('d', new Uint8Array([9, 9]));
    await store.close();
    await rm(ownersFile(dir, 'd'));

    store = await fileStore({ directory: dir });
    expect(await store.getBlob(sha)).toEqual(new Uint8Array([9, 9]));
    expect(await collect(store.blobs('d'))).toEqual([]);
    await store.close();
    expect(await readFile(join(dir, 'blobs', sha))).toEqual(Buffer.from([9, 9]));
  });

  it('a blob nobody owns is kept and listed as an orphan', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const owned = await store.putBlob(randomStream(), new Uint8Array([1]));
    await store.close();
    const bytes = new Uint8Array([7, 7, 7]);
    await writeFile(join(dir, 'blobs', sha256(bytes)), bytes);

    const reopened = await fileStore({ directory: dir });
    expect(await reopened.getBlob(sha256(bytes))).toEqual(bytes);
    await reopened.close();
    const blobs = new BlobStore(nodeFileSystem, new Layout(dir));
    await blobs.load(false);
    expect(await blobs.orphans()).toEqual([sha256(bytes)]);
    expect(await blobs.orphans()).not.toContain(owned);
  });

  it('an owner record whose blob never made it is dropped by the next writer, and ignored (copied past) by a read-only view', async () => {
    const dir = freshDir();
    const [s, t] = [randomStream('s'), randomStream('t')];
    let store = await fileStore({ directory: dir });
    await store.append(s, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const kept = await store.putBlob(s, new Uint8Array([1]));
    await store.close();
    // What a crash between recording the owner and writing the blob leaves behind.
    const lost = new Uint8Array([2, 2]);
    await appendFile(ownersFile(dir, s), frameLine(JSON.stringify({ sha256: sha256(lost) })));
    const before = await readFile(ownersFile(dir, s));

    const view = await fileStore({ directory: dir, readOnly: true });
    expect(await collect(view.blobs(s))).toEqual([kept]);
    const copy = memoryStore();
    expect(await copyStore(view, copy)).toMatchObject({ blobs: 1 });
    expect(await collect(copy.blobs(s))).toEqual([kept]);
    await view.close();
    expect(await readFile(ownersFile(dir, s))).toEqual(before);

    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(s))).toEqual([kept]);
    // Once the same bytes are stored for another stream, the dropped record must not come back for `s`.
    await store.putBlob(t, lost);
    await store.close();
    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(s))).toEqual([kept]);
    expect(await collect(store.blobs(t))).toEqual([sha256(lost)]);
    await store.close();
  });

  it('the owner is recorded before the blob: when the record cannot be made, no blob is written', async () => {
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

  it.each([
    ['a blob', 'blobs', /^Could not write blob .*: the disk is full \(ENOSPC\)\.$/],
    ["a blob's owner record", 'owners', /^Could not write .*owners.*: the disk is full \(ENOSPC\)\.$/],
  ])('%s that does not fit on a full disk says the disk is full', async (_, folder, message) => {
    const dir = freshDir();
    const blobFds = new Set<number>();
    const fs: Partial<FileSystem> = {
      open: async (path, flags, mode) => {
        const fd = await nodeFileSystem.open(path, flags, mode);
        if (path.startsWith(join(dir, folder))) blobFds.add(fd);
        return fd;
      },
      write: async (fd, buffer, offset, length, position) => {
        if (blobFds.has(fd)) throw errno('ENOSPC');
        return nodeFileSystem.write(fd, buffer, offset, length, position);
      },
    };
    const store = await fileStore({ directory: dir, fs });
    const bytes = new Uint8Array([1, 6, 1, 8]);
    const failed = await store.putBlob(randomStream(), bytes).catch((error: unknown) => error);
    await store.close();
    expect(failed).toBeInstanceOf(StorageError);
    expect((failed as StorageError).message).toMatch(message);
  });

  it('when the blob cannot be written after its owner record, the record is taken back', async () => {
    const dir = freshDir();
    const [s, t] = [randomStream('s'), randomStream('t')];
    const faults = { renames: 1 };
    const fs: Partial<FileSystem> = {
      rename: async (from, to) => {
        if (to.includes(`${join(dir, 'blobs')}`) && faults.renames > 0) {
          faults.renames--;
          throw errno('EIO');
        }
        return nodeFileSystem.rename(from, to);
      },
    };
    let store = await fileStore({ directory: dir, fs });
    const bytes = new Uint8Array([2, 7, 1, 8]);
    await expect(store.putBlob(s, bytes)).rejects.toBeInstanceOf(StorageError);
    expect(await collect(store.blobs(s))).toEqual([]);
    expect(await store.putBlob(t, bytes)).toBe(sha256(bytes));
    await store.close();

    store = await fileStore({ directory: dir });
    expect(await collect(store.blobs(s))).toEqual([]);
    expect(await collect(store.blobs(t))).toEqual([sha256(bytes)]);
    await store.close();
  });

  it('a damaged owners file is a CorruptionError naming the file and line, for a writer and a read-only view', async () => {
    const dir = freshDir();
    const s = randomStream();
    const store = await fileStore({ directory: dir });
    await store.putBlob(s, new Uint8Array([1]));
    await store.putBlob(s, new Uint8Array([2]));
    await store.close();
    const path = ownersFile(dir, s);
    const text = await readFile(path, 'utf8');
    const second = text.indexOf('\n') + 1;
    await writeFile(path, text.slice(0, second + 70) + (text[second + 70] === 'a' ? 'b' : 'a') + text.slice(second + 71));

    for (const readOnly of [true, false]) {
      const error = await fileStore({ directory: dir, readOnly }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptionError);
      expect((error as CorruptionError).file).toBe(path);
      expect((error as CorruptionError).line).toBe(2);
    }
  });
});
