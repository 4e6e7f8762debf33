import { describe, expect, it } from 'vitest';
import { StoreClosedError } from '@sessionfold/core/kernel';
import { collect, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

describe('postgresStore: close with calls in flight', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('every call made before close() settles — answered, or StoreClosedError — and close() resolves', async () => {
    const { store } = await openStore({ schema: fresh('close') });
    await store.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    // Issued in the same turn as close(): each statement is still waiting for a connection when close() starts.
    const calls = [collect(store.readAll({ fromPosition: 1 })), store.read('s').then((read) => collect(read.events)), collect(store.streams()), store.status()];
    const settled = Promise.allSettled(calls);
    await store.close();
    const outcomes = await Promise.race([settled, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), 5000))]);
    expect(outcomes, 'no call is left pending').not.toBe('pending');
    for (const outcome of outcomes as PromiseSettledResult<unknown>[]) {
      if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(StoreClosedError);
    }
    await expect(store.read('s')).rejects.toBeInstanceOf(StoreClosedError);
  });

  it('an append made before close() is committed, and close() resolves', async () => {
    const { store, schema } = await openStore({ schema: fresh('close_append') });
    const append = store.append('s', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.close();
    expect((await append).revision).toBe(1);
    const { store: again } = await openStore({ schema });
    try {
      expect((await again.read('s')).revision).toBe(1);
    } finally {
      await again.close();
    }
  });
});
