import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventStore } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { collect, eventsOf, freshDir } from './test-support.fixture.js';

/**
 * The directory `root` as macOS and Windows show it by default: names are looked up without regard to case
 * (an existing `Blobs` answers to `blobs`) and new files keep the case they were created with.
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
const twice = [...once, { type: 'Placed', data: { n: 2 } }];

/** What the store holds of `Order-1` and `order-1`: each stream's revision, snapshot state, event data and blobs. */
async function bothSpellings(store: EventStore): Promise<unknown> {
  const held: Record<string, unknown> = {};
  for (const stream of ['Order-1', 'order-1']) {
    const read = await store.read(stream);
    held[stream] = {
      revision: read.revision,
      snapshot: read.snapshot?.state,
      data: (await collect(read.events)).map((event) => event.data),
      blobs: await collect(store.blobs(stream)),
    };
  }
  return held;
}

describe('stream ids that differ only in case', () => {
  it('on a case-insensitive directory they are two streams, whose events, snapshots and blobs never mix, across reopening', async () => {
    const dir = freshDir();
    const fs = caseInsensitiveFs(dir);
    let store = await fileStore({ directory: dir, fs });
    await store.append('Order-1', once, { expectedRevision: 'no_stream' });
    await store.append('order-1', twice, { expectedRevision: 'no_stream' });
    await store.compact('order-1', { revision: 1, state: 'lower', identity: { stream: 'order-1', schemaVersion: 1 } });
    const upperBlob = await store.putBlob('Order-1', new Uint8Array([1]));
    const lowerBlob = await store.putBlob('order-1', new Uint8Array([2]));
    const expected = {
      'Order-1': { revision: 1, snapshot: undefined, data: [{ n: 1 }], blobs: [upperBlob] },
      'order-1': { revision: 2, snapshot: 'lower', data: [{ n: 2 }], blobs: [lowerBlob] },
    };
    expect(await bothSpellings(store)).toEqual(expected);
    expect(await collect(store.streams())).toEqual([
      { stream: 'Order-1', revision: 1 },
      { stream: 'order-1', revision: 2 },
    ]);
    // A stream's name is never part of a path the store writes.
    expect(fs.writes.filter((write) => /order-1/i.test(write))).toEqual([]);
    await store.close();

    store = await fileStore({ directory: dir, fs });
    expect(await bothSpellings(store)).toEqual(expected);
    // Deleting one spelling leaves the other as it was, its blob included.
    await store.deleteStream('Order-1', { expectedRevision: 1 });
    expect(await store.getBlob(upperBlob)).toBeUndefined();
    expect(await store.getBlob(lowerBlob)).toEqual(new Uint8Array([2]));
    await store.append('order-1', once, { expectedRevision: 2 });
    expect(await bothSpellings(store)).toEqual({
      'Order-1': { revision: 0, snapshot: undefined, data: [], blobs: [] },
      'order-1': { revision: 3, snapshot: 'lower', data: [{ n: 2 }, { n: 1 }], blobs: [lowerBlob] },
    });
    await store.close();
  });

  it('a read-only view on a case-insensitive directory reads both without writing anything', async () => {
    const dir = freshDir();
    const writer = await fileStore({ directory: dir });
    await writer.append('Order-1', once, { expectedRevision: 'no_stream' });
    await writer.append('order-1', twice, { expectedRevision: 'no_stream' });
    await writer.close();
    const fs = caseInsensitiveFs(dir);
    const view = await fileStore({ directory: dir, readOnly: true, fs });
    expect((await eventsOf(view, 'Order-1')).map((event) => event.data)).toEqual([{ n: 1 }]);
    expect((await eventsOf(view, 'order-1')).map((event) => event.data)).toEqual([{ n: 1 }, { n: 2 }]);
    expect((await eventsOf(view, 'ORDER-1')).length).toBe(0);
    await view.close();
    expect(fs.writes).toEqual([]);
  });

  it('on a case-sensitive directory they are two streams as well', async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    await store.append('Order-1', once, { expectedRevision: 'no_stream' });
    await store.append('order-1', twice, { expectedRevision: 'no_stream' });
    expect(await eventsOf(store, 'Order-1')).toHaveLength(1);
    expect(await eventsOf(store, 'order-1')).toHaveLength(2);
    await store.close();
  });
});
