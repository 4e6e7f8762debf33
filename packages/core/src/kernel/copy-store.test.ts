import { describe, expect, it } from 'vitest';
import { copyStore, InvalidInputError, memoryStore } from '@sessionfold/core';

describe('copyStore', () => {
  it('copies streams and blobs, and a second copy adds nothing and counts nothing', async () => {
    const from = memoryStore();
    const to = memoryStore();
    await from.append(
      's-1',
      [
        { type: 'A', data: { n: 1 } },
        { type: 'A', data: { n: 2 }, eventId: 'e-2' },
      ],
      { expectedRevision: 'no_stream' },
    );
    await from.putBlob('s-1', new Uint8Array([1, 2, 3]));
    expect(await copyStore(from, to)).toEqual({ streams: 1, events: 2, blobs: 1, unchanged: 0 });
    expect(await copyStore(from, to)).toEqual({ streams: 1, events: 0, blobs: 0, unchanged: 1 });
    await from.append('s-1', [{ type: 'A', data: { n: 3 } }], { expectedRevision: 2 });
    expect(await copyStore(from, to)).toEqual({ streams: 1, events: 1, blobs: 0, unchanged: 0 });
    expect((await to.read('s-1')).revision).toBe(3);
  });

  it('refuses a destination stream that holds other events at its head, and writes nothing', async () => {
    const from = memoryStore();
    const to = memoryStore();
    await from.append(
      's-1',
      [
        { type: 'A', data: { n: 1 } },
        { type: 'A', data: { n: 2 } },
      ],
      { expectedRevision: 'no_stream' },
    );
    await to.append('s-1', [{ type: 'Other', data: { x: 9 } }], { expectedRevision: 'no_stream' });
    await expect(copyStore(from, to)).rejects.toThrow(InvalidInputError);
    await expect(copyStore(from, to)).rejects.toThrow(/differs from the source at revision 1/);
    expect((await to.read('s-1')).revision).toBe(1);
  });

  it('refuses a destination at the same revision with different content', async () => {
    const from = memoryStore();
    const to = memoryStore();
    await from.append('s-1', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await to.append('s-1', [{ type: 'A', data: 2 }], { expectedRevision: 'no_stream' });
    await expect(copyStore(from, to)).rejects.toThrow(/differs from the source/);
  });
});
