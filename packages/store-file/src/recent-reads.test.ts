import { closeSync, fstatSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StreamId } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { RECENT_BYTES } from './stream-files.js';
import { collect, freshDir, randomStream } from './test-support.fixture.js';

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);

/** The real file system, counting the journals opened for reading and the synchronous reads. */
function counting(): { fs: Partial<FileSystem>; readOpens: () => number; syncReads: () => number } {
  let readOpens = 0;
  let syncReads = 0;
  return {
    readOpens: () => readOpens,
    syncReads: () => syncReads,
    fs: {
      open: (path, flags, mode) => {
        if (/[/\\]streams[/\\].*\.jsonl$/.test(path) && flags === 'r') readOpens++;
        return nodeFileSystem.open(path, flags, mode);
      },
      openSync: (path, flags, mode) => (nodeFileSystem.openSync as NonNullable<FileSystem['openSync']>)(path, flags, mode),
      readSync: (fd, buffer, offset, length, position) => {
        syncReads++;
        return (nodeFileSystem.readSync as NonNullable<FileSystem['readSync']>)(fd, buffer, offset, length, position);
      },
    },
  };
}

describe('reads of what the writer has just written', () => {
  it('read the file through the writer’s descriptor, opening nothing, for read() and readAll()', async () => {
    const dir = freshDir();
    const { fs, readOpens, syncReads } = counting();
    const store = await fileStore({ directory: dir, fs });
    const s = randomStream();
    const t = randomStream();
    await store.append(s, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.append(t, [{ type: 'B', data: 2 }], { expectedRevision: 'no_stream' });
    await store.append(s, [{ type: 'A', data: 3 }], { expectedRevision: 1 });

    expect((await collect((await store.read(s)).events)).map((event) => event.data)).toEqual([1, 3]);
    expect((await collect((await store.read(s, { fromRevision: 2 })).events)).map((event) => event.data)).toEqual([3]);
    expect((await collect(store.readAll({ fromPosition: 2 }))).map((record) => record.data)).toEqual([2, 3]);
    expect(readOpens()).toBe(0);
    expect(syncReads()).toBeGreaterThanOrEqual(4);
    await store.close();
  });

  it('still find damage to those bytes on disk: they are read from the file, not from a copy', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const s = randomStream();
    await store.append(s, [{ type: 'A', data: 'aaaa' }], { expectedRevision: 'no_stream' });
    await store.append(s, [{ type: 'A', data: 'bbbb' }], { expectedRevision: 1 });
    // Another descriptor changes one byte inside the second line's data, as a disk that rots would.
    const fd = openSync(journalOf(dir, s), 'r+');
    const { size } = fstatSync(fd);
    writeSync(fd, Buffer.from('c'), 0, 1, size - 4);
    closeSync(fd);
    await expect(collect((await store.read(s)).events)).rejects.toMatchObject({ code: 'corruption', line: 2 });
    await store.close().catch(() => undefined);
  });

  it('open the journal as before once its bytes are not all recent, or the writer let its descriptor go', async () => {
    const dir = freshDir();
    const { fs, readOpens } = counting();
    const store = await fileStore({ directory: dir, fs });
    const s = randomStream();
    const big = 'x'.repeat(1024);
    const count = Math.ceil((2 * RECENT_BYTES) / big.length);
    for (let revision = 0; revision < count; revision++) await store.append(s, [{ type: 'A', data: big }], { expectedRevision: revision });
    // The whole journal is more than what counts as recent; its last event is not (and needs no checkpoint).
    expect((await collect((await store.read(s)).events)).length).toBe(count);
    expect(readOpens()).toBe(1);
    expect((await collect((await store.read(s, { fromRevision: count })).events)).length).toBe(1);
    expect(readOpens()).toBe(1);

    // Compaction replaces the journal and lets the descriptor go: the next read opens the new file.
    await store.compact(s, { revision: count - 1, state: 'up to here', identity: { stream: s, schemaVersion: 1 } });
    const opened = readOpens();
    const after = await store.read(s);
    expect(after.snapshot?.revision).toBe(count - 1);
    expect((await collect(after.events)).map((event) => event.revision)).toEqual([count]);
    expect(readOpens()).toBe(opened + 1);
    // Appends to the new journal are recent again.
    await store.append(s, [{ type: 'A', data: 'after' }], { expectedRevision: count });
    expect((await collect((await store.read(s, { fromRevision: count + 1 })).events)).map((event) => event.data)).toEqual(['after']);
    expect(readOpens()).toBe(opened + 1);
    await store.close();
  });
});
