import { streamReadsAgreeWithFeed } from '@sessionfold/conformance';
import { describe, it } from 'vitest';
import { openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

describe('postgresStore: stream pages after the first (what repeats the page before left out)', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('give every event as the feed gives it, with two reads whose pages interleave', async () => {
    const { store } = await openStore({ schema: fresh('pages3') });
    try {
      await streamReadsAgreeWithFeed(store);
    } finally {
      await store.close();
    }
  });
});
