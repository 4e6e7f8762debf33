import { describe, expect, it } from 'vitest';
import { CorruptionError, type StoreObserver } from '@sessionfold/core/kernel';
import { PG_URL, adminPool, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

const any = { expectedRevision: 'any' } as const;

/** An observer that records every call, by hook. */
function recorder() {
  const calls: Array<[string, Record<string, unknown>]> = [];
  const observer: StoreObserver = {
    appendCommitted: (value) => void calls.push(['appendCommitted', value]),
    flushed: (value) => void calls.push(['flushed', value]),
    compacted: (value) => void calls.push(['compacted', value]),
    corruptionFound: (value) => void calls.push(['corruptionFound', value]),
  };
  const of = (hook: string) => calls.filter(([name]) => name === hook).map(([, value]) => value);
  return { observer, of };
}

describe.skipIf(PG_URL === undefined)('postgresStore: observer', () => {
  const fresh = schemasDroppedAfterAll();

  it('tells of each append, each group commit and each compaction, with their sizes', async () => {
    const { observer, of } = recorder();
    const { store } = await openStore({ schema: fresh('obs'), observer });
    try {
      // Issued in one turn: one group, one transaction.
      await Promise.all([store.append('a', [{ type: 'A', data: 'é' }, { type: 'A', data: 2 }], any), store.append('b', [{ type: 'B', data: 3 }], any)]);
      const appends = of('appendCommitted');
      expect(appends).toEqual([
        // UTF-8 bytes of type and data: A + "é" (5), A + 2 (2).
        { stream: 'a', events: 2, bytes: 7, durationMs: expect.any(Number) },
        { stream: 'b', events: 1, bytes: 2, durationMs: expect.any(Number) },
      ]);
      expect(of('flushed')).toEqual([{ appends: 2, events: 3, bytes: 9, syncMs: expect.any(Number) }]);
      for (const value of [...appends, ...of('flushed')]) expect(Object.values(value).filter((v) => typeof v === 'number' && v < 0)).toEqual([]);
      // A refused append commits nothing and is not reported.
      await expect(store.append('a', [{ type: 'A', data: 4 }], { expectedRevision: 7 })).rejects.toMatchObject({ code: 'concurrency_conflict' });
      expect(of('appendCommitted')).toHaveLength(2);
      await store.compact('a', { revision: 2, state: 's', identity: { stream: 'a', schemaVersion: 1 } });
      expect(of('compacted')).toEqual([{ stream: 'a', revision: 2, droppedEvents: 2, durationMs: expect.any(Number) }]);
      expect(of('corruptionFound')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('tells of damage a read finds, with the error the caller gets', async () => {
    const { observer, of } = recorder();
    const { store, schema } = await openStore({ schema: fresh('damage'), observer });
    try {
      const sha256 = await store.putBlob('a', new Uint8Array([1, 2, 3]));
      await adminPool().query(`UPDATE "${schema}".blobs SET bytes = '\\x09'`);
      const error = await store.getBlob(sha256).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(of('corruptionFound')).toEqual([{ error }]);
    } finally {
      await store.close();
    }
  });

  it('an observer that throws or rejects breaks nothing', async () => {
    const boom = () => {
      throw new Error('observer failed');
    };
    const observer: StoreObserver = { appendCommitted: boom, flushed: () => Promise.reject(new Error('later')) as never, compacted: boom };
    const { store } = await openStore({ schema: fresh('throw'), observer });
    try {
      expect(await store.append('a', [{ type: 'A', data: 1 }], any)).toEqual({ revision: 1, position: 1 });
      await store.compact('a', { revision: 1, state: 's', identity: { stream: 'a', schemaVersion: 1 } });
      expect((await store.read('a')).revision).toBe(1);
    } finally {
      await store.close();
    }
  });
});
