import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fileStore } from './index.js';
import { freshDir, segmentsOf } from './test-support.fixture.js';

/** The bytes of every segment of the store in `directory`, added up. */
const logBytesOf = (directory: string) => segmentsOf(directory).reduce((sum, path) => sum + statSync(path).size, 0);

describe('status', () => {
  it('names the lock holder, the store id, the format, the streams, the segments and the last position, on the writer and on a view', async () => {
    const directory = freshDir();
    const writer = await fileStore({ directory });
    await writer.append(
      'a',
      [
        { type: 'N', data: 1 },
        { type: 'N', data: 2 },
      ],
      { expectedRevision: 'no_stream' },
    );
    await writer.append('b', [{ type: 'N', data: 1 }], { expectedRevision: 'no_stream' });
    const storeId = await writer.checkpoints!.storeId();
    const expected = () => ({
      directory,
      storeId,
      lockHolderPid: process.pid,
      formatVersion: 4,
      streams: 2,
      segments: segmentsOf(directory).length,
      logBytes: logBytesOf(directory),
      writesRefused: null,
    });
    expect(expected().segments).toBe(1);
    expect(expected().logBytes).toBeGreaterThan(0);
    expect(await writer.status!()).toEqual({ kind: 'file', lastPosition: 3, holdingBack: [], details: { ...expected(), readOnly: false } });
    const view = await fileStore({ directory, readOnly: true });
    expect(await view.status!()).toEqual({ kind: 'file', lastPosition: 3, holdingBack: [], details: { ...expected(), readOnly: true } });
    await writer.close();
    expect((await view.status!()).details.lockHolderPid).toBeNull();
    await view.close();
  });

  it("a read-only view's status follows what the writer appended and deleted after the view opened", async () => {
    const directory = freshDir();
    const writer = await fileStore({ directory });
    await writer.append('a', [{ type: 'N', data: 1 }], { expectedRevision: 'no_stream' });
    const view = await fileStore({ directory, readOnly: true });
    try {
      expect(await view.status!()).toMatchObject({ lastPosition: 1, details: { streams: 1 } });
      await writer.append('b', [{ type: 'N', data: 1 }], { expectedRevision: 'no_stream' });
      await writer.append('a', [{ type: 'N', data: 2 }], { expectedRevision: 1 });
      expect(await view.status!()).toMatchObject({ lastPosition: 3, details: { streams: 2, logBytes: logBytesOf(directory) } });
      // A deletion takes a position and leaves one stream.
      await writer.deleteStream('b', { expectedRevision: 1 });
      const status = await view.status!();
      expect(status).toMatchObject({ lastPosition: 4, details: { streams: 1, logBytes: logBytesOf(directory) } });
      expect(status).toEqual(await writer.status!().then((own) => ({ ...own, details: { ...own.details, readOnly: true } })));
    } finally {
      await view.close();
      await writer.close();
    }
  });
});
