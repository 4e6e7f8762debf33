import { describe, expect, it } from 'vitest';
import { memoryStore } from '@sessionfold/core';

describe('memoryStore', () => {
  it('appends and reads back a stream', async () => {
    const store = memoryStore();
    await store.append('s-1', [{ type: 'A', data: { n: 1 } }], { expectedRevision: 'no_stream' });
    const read = await store.read('s-1');
    const events = [];
    for await (const e of read.events) events.push(e);
    expect(events.map((e) => e.data)).toEqual([{ n: 1 }]);
  });
});
