import { describe, expect, it } from 'vitest';
import type { EventStore } from '@sessionfold/core/kernel';
import { collect, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

describe('postgresStore: reads longer than a page (first pages of 512, then 4096)', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('readAll and read go page by page without losing or repeating a record, from any position', async () => {
    const { store } = await openStore({ schema: fresh('pages') });
    try {
      const append = (s: EventStore, stream: string, count: number) =>
        s.append(
          stream,
          Array.from({ length: count }, (_, i) => ({ type: 'E', data: { i } })),
          { expectedRevision: 'any' },
        );
      for (let round = 0; round < 60; round++) await Promise.all([append(store, 'long', 100), append(store, `other-${round % 3}`, 7)]);
      await store.compact('long', { revision: 250, state: { upTo: 250 }, identity: { stream: 'long', schemaVersion: 1 } });
      const feed = await collect(store.readAll());
      const positions = feed.map((r) => r.position);
      expect([...positions].sort((a, b) => a - b)).toEqual(positions);
      expect(new Set(positions).size).toBe(positions.length);
      expect(feed.filter((r) => r.streamId === 'long' && r.type === 'E').map((r) => r.revision)).toEqual(Array.from({ length: 5750 }, (_, i) => i + 251));
      expect(feed.filter((r) => r.streamId.startsWith('other-'))).toHaveLength(420);
      for (const from of [1, 2, 513, 700, 1024, 4610, 5000, positions[600] as number, (positions.at(-1) as number) + 1]) {
        expect(await collect(store.readAll({ fromPosition: from }))).toEqual(feed.filter((r) => r.position >= from));
      }
      const read = await store.read('long');
      expect(read.snapshot?.revision).toBe(250);
      expect((await collect(read.events)).map((e) => e.revision)).toEqual(Array.from({ length: 5750 }, (_, i) => i + 251));
      const later = await store.read('long', { fromRevision: 777 });
      expect((await collect(later.events)).map((e) => e.revision)).toEqual(Array.from({ length: 5224 }, (_, i) => i + 777));
    } finally {
      await store.close();
    }
  });
});
