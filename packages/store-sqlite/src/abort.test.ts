import { describe, expect, it } from 'vitest';
import { copyStore, foldStream, memoryStore, type StreamReducer } from '@sessionfold/core/kernel';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

/** Counts events; `onApply` runs before each one is applied. */
const counter = (onApply: (n: number) => void): StreamReducer<number> => ({
  schemaVersion: 1,
  initial: () => 0,
  apply: (state) => (onApply(state + 1), state + 1),
  toSnapshot: (state) => state,
  fromSnapshot: (state) => state as number,
});

describe('sqliteStore with aborted kernel operations', () => {
  it('a copy into SQLite stopped between streams survives a reopen and continues where it stopped', async () => {
    const from = memoryStore();
    for (const [stream, count] of [
      ['a', 700],
      ['b', 3],
    ] as const) {
      await from.append(
        stream,
        Array.from({ length: count }, (_, n) => ({ type: 'E', data: n })),
        { expectedRevision: 'no_stream' },
      );
    }
    const path = freshPath();
    const to = await sqliteStore({ path });
    const controller = new AbortController();
    const reason = new Error('stop');
    const copying = copyStore(from, to, { signal: controller.signal, onProgress: () => controller.abort(reason) });
    await expect(copying).rejects.toBe(reason);
    await to.close();
    const reopened = await sqliteStore({ path });
    try {
      expect((await reopened.read('a')).revision).toBe(700);
      expect((await reopened.read('b')).revision).toBe(0);
      expect(await copyStore(from, reopened)).toEqual({ streams: 2, events: 3, blobs: 0, unchanged: 1 });
    } finally {
      await reopened.close();
    }
  });

  it('a fold stopped in the middle of a paged read leaves the store reading and writing', async () => {
    const store = await sqliteStore({ path: freshPath() });
    try {
      await store.append(
        's',
        Array.from({ length: 1500 }, (_, n) => ({ type: 'E', data: n })),
        { expectedRevision: 'no_stream' },
      );
      const controller = new AbortController();
      const reason = new Error('enough');
      await expect(
        foldStream(
          store,
          's',
          counter((n) => n === 1000 && controller.abort(reason)),
          { signal: controller.signal },
        ),
      ).rejects.toBe(reason);
      expect(await store.append('s', [{ type: 'E', data: 'more' }], { expectedRevision: 1500 })).toEqual({ revision: 1501, position: 1501 });
      expect(
        (
          await foldStream(
            store,
            's',
            counter(() => undefined),
          )
        ).state,
      ).toBe(1501);
    } finally {
      await store.close();
    }
  });
});
