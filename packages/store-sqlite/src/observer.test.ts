import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { CorruptionError, InvalidInputError, type StoreObserver } from '@sessionfold/core/kernel';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

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

describe('sqliteStore: observer', () => {
  it('is checked with the other options', async () => {
    for (const observer of ['log', { flushed: 1 }]) {
      await expect(sqliteStore({ path: freshPath(), observer: observer as never })).rejects.toMatchObject({ field: 'observer' });
      await expect(sqliteStore({ path: freshPath(), observer: observer as never })).rejects.toBeInstanceOf(InvalidInputError);
    }
  });

  it('tells of each append, each shared commit and each compaction, with their sizes', async () => {
    const { observer, of } = recorder();
    const store = await sqliteStore({ path: freshPath(), observer });
    try {
      // Issued in one turn: one transaction; the refused append is in it but wrote nothing.
      const results = await Promise.allSettled([
        store.append('a', [{ type: 'A', data: 'é' }, { type: 'A', data: 2 }], any),
        store.append('b', [{ type: 'B', data: 3 }], any),
        store.append('c', [{ type: 'C', data: 4 }], { expectedRevision: 5 }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      // UTF-8 bytes of type and data: A + "é" (5), A + 2 (2); B + 3 (2).
      expect(of('appendCommitted')).toEqual([
        { stream: 'a', events: 2, bytes: 7, durationMs: expect.any(Number) },
        { stream: 'b', events: 1, bytes: 2, durationMs: expect.any(Number) },
      ]);
      expect(of('flushed')).toEqual([{ appends: 2, events: 3, bytes: 9, syncMs: expect.any(Number) }]);
      for (const value of [...of('appendCommitted'), ...of('flushed')]) {
        expect(Object.values(value).filter((v) => typeof v === 'number' && v < 0)).toEqual([]);
      }
      await store.compact('a', { revision: 2, state: 's', identity: { stream: 'a', schemaVersion: 1 } });
      expect(of('compacted')).toEqual([{ stream: 'a', revision: 2, droppedEvents: 2, durationMs: expect.any(Number) }]);
      // A commit with no append in it (a blob) is not a flush of appends.
      await store.putBlob('a', new Uint8Array([1]));
      expect(of('flushed')).toHaveLength(1);
      expect(of('corruptionFound')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('tells of damage a read finds, once, with the error the caller gets', async () => {
    const { observer, of } = recorder();
    const path = freshPath();
    const store = await sqliteStore({ path, observer });
    try {
      await store.append('a', [1, 2, 3].map((n) => ({ type: 'A', data: n })), any);
      const raw = new Database(path);
      raw.prepare("DELETE FROM events WHERE stream = 'a' AND revision = 2").run();
      raw.close();
      const error = await store.read('a').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(of('corruptionFound')).toEqual([{ error }]);
    } finally {
      await store.close();
    }
  });

  it('tells of damage found on open', async () => {
    const { observer, of } = recorder();
    const path = freshPath();
    writeFileSync(path, 'not a database, but long enough to look like a header of one at least '.repeat(20));
    const error = await sqliteStore({ path, observer }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CorruptionError);
    expect(of('corruptionFound')).toEqual([{ error }]);
  });

  it('an observer that throws or rejects breaks nothing', async () => {
    const boom = () => {
      throw new Error('observer failed');
    };
    const observer: StoreObserver = { appendCommitted: boom, flushed: () => Promise.reject(new Error('later')) as never, compacted: boom };
    const store = await sqliteStore({ path: freshPath(), observer });
    try {
      expect(await store.append('a', [{ type: 'A', data: 1 }], any)).toEqual({ revision: 1, position: 1 });
      await store.compact('a', { revision: 1, state: 's', identity: { stream: 'a', schemaVersion: 1 } });
      expect((await store.read('a')).revision).toBe(1);
    } finally {
      await store.close();
    }
  });
});
