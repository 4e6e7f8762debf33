import { readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidInputError, type EventStore } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { eventsOf, freshDir } from './test-support.fixture.js';

/**
 * The directory `root` as macOS and Windows show it by default: names are looked up without regard to case
 * (an existing `Order-1.jsonl` answers to `order-1.jsonl`) and new files keep the case they were created with.
 */
function caseInsensitiveFs(root: string): Partial<FileSystem> & { writes: string[] } {
  const resolve = (path: string): string => {
    if (!path.startsWith(root)) return path;
    let current = root;
    for (const part of path.slice(root.length).split('/').filter(Boolean)) {
      let names: string[] = [];
      try {
        names = readdirSync(current);
      } catch {
        // A missing directory: keep the name as given.
      }
      current = join(current, names.find((name) => name.toLowerCase() === part.toLowerCase()) ?? part);
    }
    return current;
  };
  const writes: string[] = [];
  const wrote = (what: string) => writes.push(what);
  const fsl = nodeFileSystem;
  return {
    writes,
    open: (path, flags, mode) => {
      if (flags !== 'r') wrote(`open ${flags} ${path}`);
      return fsl.open(resolve(path), flags, mode);
    },
    rename: (from, to) => (wrote(`rename ${to}`), fsl.rename(resolve(from), resolve(to))),
    unlink: (path) => (wrote(`unlink ${path}`), fsl.unlink(resolve(path))),
    link: (existing, path) => (wrote(`link ${path}`), fsl.link(resolve(existing), resolve(path))),
    mkdir: (path, mode) => (wrote(`mkdir ${path}`), fsl.mkdir(resolve(path), mode)),
    readdir: (path) => fsl.readdir(resolve(path)),
    lstat: (path) => fsl.lstat(resolve(path)),
    readFile: (path) => fsl.readFile(resolve(path)),
  };
}

const once = [{ type: 'Placed', data: { n: 1 } }];

async function expectRefused(action: () => Promise<unknown>): Promise<void> {
  const error = await action().catch((e: unknown) => e);
  expect(error).toBeInstanceOf(InvalidInputError);
  expect(error).toMatchObject({ field: 'stream' });
  expect((error as Error).message).toMatch(/case/);
}

/** Every call of the port that takes `stream` refuses it. */
async function expectEveryCallRefuses(store: EventStore, stream: string): Promise<void> {
  await expectRefused(() => store.append(stream, once, { expectedRevision: 'any' }));
  await expectRefused(() => store.read(stream));
  await expectRefused(() => store.putBlob(stream, new Uint8Array([1])));
  await expectRefused(async () => {
    for await (const sha of store.blobs(stream)) void sha;
  });
  await expectRefused(() => store.compact(stream, { revision: 1, state: null, identity: { stream, schemaVersion: 1 } }));
  await expectRefused(() => store.restoreStream(stream, { revision: 1, state: null, identity: { stream, schemaVersion: 1 } }));
  await expectRefused(() => store.deleteStream(stream, { expectedRevision: 'any' }));
}

describe('stream ids that differ only in case', () => {
  it('on a case-insensitive directory they are refused by every call, and never share a journal, across reopening', async () => {
    const dir = freshDir();
    const fs = caseInsensitiveFs(dir);
    let store = await fileStore({ directory: dir, fs });
    await store.append('Order-1', once, { expectedRevision: 'no_stream' });
    await store.putBlob('Blobs-Only', new Uint8Array([9]));
    await expectEveryCallRefuses(store, 'order-1');
    await expectEveryCallRefuses(store, 'blobs-only');
    expect((await store.read('Order-1')).revision).toBe(1);
    await store.close();

    store = await fileStore({ directory: dir, fs });
    await expectEveryCallRefuses(store, 'ORDER-1');
    expect(await eventsOf(store, 'Order-1')).toHaveLength(1);
    // Once the stream and its files are gone, the other spelling is free.
    await store.deleteStream('Order-1', { expectedRevision: 1 });
    await store.append('order-1', once, { expectedRevision: 'no_stream' });
    await expectRefused(() => store.read('Order-1'));
    await store.close();
  });

  it('a read-only view detects a case-insensitive directory without writing anything', async () => {
    const dir = freshDir();
    const writer = await fileStore({ directory: dir });
    await writer.append('Order-1', once, { expectedRevision: 'no_stream' });
    await writer.close();
    const fs = caseInsensitiveFs(dir);
    const view = await fileStore({ directory: dir, readOnly: true, fs });
    await expectRefused(() => view.read('order-1'));
    expect((await view.read('Order-1')).revision).toBe(1);
    await view.close();
    expect(fs.writes).toEqual([]);
  });

  it('on a case-sensitive directory they are two streams, even beside a STREAMS directory of its own', async () => {
    const dir = freshDir();
    await mkdir(join(dir, 'streams'));
    await mkdir(join(dir, 'STREAMS'));
    const store = await fileStore({ directory: dir });
    await store.append('Order-1', once, { expectedRevision: 'no_stream' });
    await store.append('order-1', [...once, ...once], { expectedRevision: 'no_stream' });
    expect(await eventsOf(store, 'Order-1')).toHaveLength(1);
    expect(await eventsOf(store, 'order-1')).toHaveLength(2);
    await store.close();
  });
});
