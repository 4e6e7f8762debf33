import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, randomStream } from './test-support.fixture.js';

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

  it('a blob written without its owner record (a crash between the two) is removed by the next writer', async () => {
    const dir = freshDir();
    await (await fileStore({ directory: dir })).close();
    const bytes = new Uint8Array([7, 7, 7]);
    const sha = createHash('sha256').update(bytes).digest('hex');
    await writeFile(join(dir, 'blobs', sha), bytes);
    const store = await fileStore({ directory: dir });
    expect(await store.getBlob(sha)).toBeUndefined();
    await store.close();
  });
});
