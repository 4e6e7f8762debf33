import { describe, expect, it } from 'vitest';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { collect, freshDir, randomStream } from './test-support.fixture.js';

describe('the change feed over many journals', () => {
  it('opens the next journals ahead of need, several at once, and still yields in position order', async () => {
    const dir = freshDir();
    const writer = await fileStore({ directory: dir });
    const streams = Array.from({ length: 40 }, (_, i) => randomStream(`r${i}`));
    for (const stream of streams) await writer.append(stream, [{ type: 'E', data: stream }], { expectedRevision: 'no_stream' });
    await writer.close();

    let opening = 0;
    let most = 0;
    let counting = false;
    const fs: Partial<FileSystem> = {
      open: async (path, flags, mode) => {
        if (!counting || !path.endsWith('.jsonl')) return nodeFileSystem.open(path, flags, mode);
        opening++;
        most = Math.max(most, opening);
        try {
          // Held a moment, as a busy disk would: opens issued meanwhile overlap this one.
          await new Promise((resolve) => setTimeout(resolve, 2));
          return await nodeFileSystem.open(path, flags, mode);
        } finally {
          opening--;
        }
      },
    };
    const view = await fileStore({ directory: dir, readOnly: true, fs });
    counting = true;
    const feed = await collect(view.readAll());
    await view.close();
    expect(feed.map((record) => [record.position, record.streamId])).toEqual(streams.map((stream, i) => [i + 1, stream]));
    expect(most).toBeGreaterThan(1);
  });
});
