import { describe, expect, it } from 'vitest';
import { CorruptionError } from '@sessionfold/core/kernel';
import { adminPool, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

/** The hooks every store calls are checked by the conformance suite (`withObserver`); damage is made here by hand. */
describe('postgresStore: observer', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('tells of damage a read finds, with the error the caller gets', async () => {
    const found: unknown[] = [];
    const { store, schema } = await openStore({ schema: fresh('damage'), observer: { corruptionFound: ({ error }) => void found.push(error) } });
    try {
      const sha256 = await store.putBlob('a', new Uint8Array([1, 2, 3]));
      await adminPool().query(`UPDATE "${schema}".blobs SET bytes = '\\x09'`);
      const error = await store.getBlob(sha256).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CorruptionError);
      expect(found).toEqual([error]);
    } finally {
      await store.close();
    }
  });
});
