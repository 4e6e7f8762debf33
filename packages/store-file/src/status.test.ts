import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nodeFileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { setSegmentBytesForTests } from './log/log-writer.js';
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
      compactedStreams: 0,
      compactedEvents: 0,
      deadBytes: 0,
      segmentsToClean: 0,
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

  it('reports compaction: the streams with a snapshot, the revisions they cover, the dead bytes and the sealed segments waiting to be cleaned', async () => {
    const directory = freshDir();
    const previous = setSegmentBytesForTests(2048);
    // A cleaning that cannot write its file leaves the dead segments as they are: they stay counted.
    const writer = await fileStore({
      directory,
      fs: {
        open: (path, flags, mode) =>
          path.endsWith('.clean.tmp') ? Promise.reject(Object.assign(new Error('EACCES'), { code: 'EACCES' })) : nodeFileSystem.open(path, flags, mode),
      },
    });
    try {
      // One event at a time to each stream in turn, so each event of `a` is a run of its own in the index.
      for (let n = 0; n < 40; n++) {
        await writer.append('a', [{ type: 'N', data: { n, pad: 'a'.repeat(300) } }], { expectedRevision: n });
        await writer.append('b', [{ type: 'N', data: { n } }], { expectedRevision: n });
      }
      expect((await writer.status()).details).toMatchObject({ compactedStreams: 0, compactedEvents: 0, deadBytes: 0, segmentsToClean: 0 });
      await writer.compact('a', { revision: 30, state: { upTo: 30 }, identity: { stream: 'a', schemaVersion: 1 } });
      const details = (await writer.status()).details as Record<string, number>;
      expect(details).toMatchObject({ compactedStreams: 1, compactedEvents: 30 });
      // The 30 lines of `a` the snapshot covers, each longer than 300 bytes, are dead; so are most of the sealed segments they fill.
      expect(details['deadBytes']).toBeGreaterThan(30 * 300);
      expect(details['deadBytes']).toBeLessThan(details['logBytes'] as number);
      expect(details['segmentsToClean']).toBeGreaterThan(0);
      expect(details['segmentsToClean']).toBeLessThan(details['segments'] as number);
      const view = await fileStore({ directory, readOnly: true });
      try {
        expect((await view.status()).details).toMatchObject({
          compactedStreams: 1,
          compactedEvents: 30,
          deadBytes: details['deadBytes'],
          segmentsToClean: details['segmentsToClean'],
        });
      } finally {
        await view.close();
      }
      // A deletion drops the stream's snapshot with it.
      await writer.deleteStream('a', { expectedRevision: 40 });
      expect((await writer.status()).details).toMatchObject({ compactedStreams: 0, compactedEvents: 0 });
    } finally {
      await writer.close();
      setSegmentBytesForTests(previous);
    }
  });
});
