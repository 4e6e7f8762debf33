import { streamReadsAgreeWithFeed } from '@sessionfold/conformance';
import { describe, it } from 'vitest';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

describe('sqliteStore: stream pages (what repeats the page before left out)', () => {
  it('give every event as the feed gives it, across pages, batches, types, event ids and schema versions', async () => {
    const store = await sqliteStore({ path: freshPath() });
    try {
      await streamReadsAgreeWithFeed(store);
    } finally {
      await store.close();
    }
  });
});
