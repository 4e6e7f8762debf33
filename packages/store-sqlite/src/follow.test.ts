import type { RecordedEvent } from '@sessionfold/core/kernel';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { finished, freshPath, randomStream, startWorker } from './test-support.fixture.js';

describe('follow across processes', () => {
  it('a follower sees every append of another process, once and in order', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    const stream = randomStream('remote');
    const controller = new AbortController();
    const seen: RecordedEvent[] = [];
    const following = (async () => {
      for await (const record of store.follow!({ signal: controller.signal })) {
        seen.push(record);
        if (seen.length === 200) controller.abort();
      }
    })();
    await finished(startWorker('appender', [path, stream, '200']));
    const deadline = Date.now() + 5000;
    while (seen.length < 200 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    await following;
    expect(seen.map((r) => r.revision)).toEqual(Array.from({ length: 200 }, (_, n) => n + 1));
    expect(seen.map((r) => r.data)).toEqual(Array.from({ length: 200 }, (_, n) => ({ n })));
    await store.close();
  });
});
