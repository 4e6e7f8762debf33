import { streamReadsAgreeWithFeed } from '@sessionfold/conformance';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

describe('sqliteStore: stream pages (three columns, the rest where it changes)', () => {
  it('give every event as the feed gives it, across pages, batches, types, event ids and schema versions', async () => {
    const store = await sqliteStore({ path: freshPath() });
    try {
      await streamReadsAgreeWithFeed(store);
    } finally {
      await store.close();
    }
  });
});
