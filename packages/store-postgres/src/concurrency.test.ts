import { describe, expect, it } from 'vitest';
import { ConcurrencyError, type EventStore, type RecordedEvent } from '@sessionfold/core/kernel';
import { collect, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

/** Eight stores on one schema: eight pools, so eight connections racing as eight processes would. */
async function openEight(schema: string): Promise<EventStore[]> {
  const stores: EventStore[] = [];
  for (let i = 0; i < 8; i++) stores.push((await openStore({ schema })).store);
  return stores;
}

describe('postgresStore: connections racing on one stream', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('with expected revisions: exactly one winner per revision, no duplicates, no gaps', async () => {
    const schema = fresh('race');
    const stores = await openEight(schema);
    const target = 160;
    const won: Array<{ writer: number; revision: number; position: number }> = [];
    let conflicts = 0;
    try {
      await Promise.all(
        stores.map(async (store, writer) => {
          let expected = 0;
          while (won.length < target) {
            try {
              const result = await store.append('contended', [{ type: 'Won', data: { writer, expected } }], { expectedRevision: expected });
              won.push({ writer, ...result });
              expected = result.revision;
            } catch (error) {
              if (!(error instanceof ConcurrencyError)) throw error;
              expect(error.actual).toBeGreaterThan(expected);
              conflicts++;
              expected = error.actual;
            }
          }
        }),
      );
      const revisions = won.map((w) => w.revision).sort((a, b) => a - b);
      expect(revisions).toEqual(Array.from({ length: won.length }, (_, i) => i + 1));
      const stored = await collect((await (stores[0] as EventStore).read('contended')).events);
      expect(stored.map((e) => e.revision)).toEqual(revisions);
      // Each stored event was written by the writer told it won that revision, expecting the one before.
      for (const event of stored) {
        const winner = won.find((w) => w.revision === event.revision);
        expect(event.data).toEqual({ writer: winner?.writer, expected: event.revision - 1 });
        expect(event.position).toBe(winner?.position);
      }
      // Positions are handed out at commit, after the check: losers leave no gap in the feed.
      const feed = await collect((stores[0] as EventStore).readAll());
      expect(feed.map((e: RecordedEvent) => e.position)).toEqual(Array.from({ length: won.length }, (_, i) => i + 1));
      expect(conflicts).toBeGreaterThan(0);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it("with 'any': every append lands, each batch whole, revisions and positions without gaps", async () => {
    const schema = fresh('any');
    const stores = await openEight(schema);
    try {
      const results = await Promise.all(
        stores.flatMap((store, writer) =>
          Array.from({ length: 20 }, (_, n) =>
            store.append(
              'shared',
              [
                { type: 'First', data: { writer, n } },
                { type: 'Second', data: { writer, n } },
              ],
              { expectedRevision: 'any' },
            ),
          ),
        ),
      );
      expect(results.map((r) => r.revision).sort((a, b) => a - b)).toEqual(Array.from({ length: 160 }, (_, i) => 2 * (i + 1)));
      const stored = await collect((await (stores[0] as EventStore).read('shared')).events);
      expect(stored.map((e) => e.revision)).toEqual(Array.from({ length: 320 }, (_, i) => i + 1));
      expect(stored.map((e) => e.position)).toEqual(Array.from({ length: 320 }, (_, i) => i + 1));
      for (let i = 0; i < stored.length; i += 2) {
        expect([stored[i]?.type, stored[i + 1]?.type]).toEqual(['First', 'Second']);
        expect(stored[i]?.data).toEqual(stored[i + 1]?.data);
      }
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});
