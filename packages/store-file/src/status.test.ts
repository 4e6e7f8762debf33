import { describe, expect, it } from 'vitest';
import { fileStore } from './index.js';
import { freshDir } from './test-support.fixture.js';

describe('status', () => {
  it('names the lock holder, the store id, the streams and the last position, on the writer and on a view', async () => {
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
    const expected = { directory, storeId, lockHolderPid: process.pid, streams: 2, writesRefused: null };
    expect(await writer.status!()).toEqual({ kind: 'file', lastPosition: 3, holdingBack: [], details: { ...expected, readOnly: false } });
    const view = await fileStore({ directory, readOnly: true });
    expect(await view.status!()).toEqual({ kind: 'file', lastPosition: 3, holdingBack: [], details: { ...expected, readOnly: true } });
    await writer.close();
    expect((await view.status!()).details.lockHolderPid).toBeNull();
    await view.close();
  });
});
