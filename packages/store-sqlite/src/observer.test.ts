import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { CorruptionError, InvalidInputError } from '@sessionfold/core/kernel';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

const any = { expectedRevision: 'any' } as const;

/** An observer keeping the errors `corruptionFound` is told of. */
function damageRecorder() {
  const found: unknown[] = [];
  return { found, observer: { corruptionFound: ({ error }: { error: CorruptionError }) => void found.push(error) } };
}

/** The hooks every store calls are checked by the conformance suite (`withObserver`); damage is made here by hand. */
describe('sqliteStore: observer', () => {
  it('is checked with the other options', async () => {
    for (const observer of ['log', { flushed: 1 }]) {
      await expect(sqliteStore({ path: freshPath(), observer: observer as never })).rejects.toMatchObject({ field: 'observer' });
      await expect(sqliteStore({ path: freshPath(), observer: observer as never })).rejects.toBeInstanceOf(InvalidInputError);
    }
  });

  it('tells of damage a read finds, once, with the error the caller gets', async () => {
    const { observer, found } = damageRecorder();
    const path = freshPath();
    const store = await sqliteStore({ path, observer });
    try {
      await store.append(
        'a',
        [1, 2, 3].map((n) => ({ type: 'A', data: n })),
        any,
      );
      const raw = new Database(path);
      raw.prepare("DELETE FROM events WHERE stream = 'a' AND revision = 2").run();
      raw.close();
      const error = await store.read('a').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(found).toEqual([error]);
    } finally {
      await store.close();
    }
  });

  it('tells of damage found on open', async () => {
    const { observer, found } = damageRecorder();
    const path = freshPath();
    writeFileSync(path, 'not a database, but long enough to look like a header of one at least '.repeat(20));
    const error = await sqliteStore({ path, observer }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CorruptionError);
    expect(found).toEqual([error]);
  });
});
