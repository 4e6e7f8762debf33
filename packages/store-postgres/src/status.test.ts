import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from './schema.js';
import { openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

describe('postgresStore: status details', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it("reports the schema, its version and sizes, and whether the store's follow is listening", async () => {
    const { store, schema } = await openStore({ schema: fresh('status') });
    try {
      await store.append('a', [{ type: 'A', data: 'x'.repeat(1000) }], { expectedRevision: 'no_stream' });
      const before = await store.status();
      expect(before).toMatchObject({ kind: 'postgres', lastPosition: 1, holdingBack: [] });
      expect(before.details).toMatchObject({ schema, schemaVersion: SCHEMA_VERSION, readOnly: false, oldestHoldingPid: null, following: false });
      const details = before.details as Record<string, number>;
      expect(details['eventsBytes']).toBeGreaterThan(0);
      expect(details['totalBytes']).toBeGreaterThanOrEqual((details['eventsBytes'] as number) + (details['blobsBytes'] as number));
      expect(details['streamsEstimate']).toBeGreaterThanOrEqual(0);
      const controller = new AbortController();
      const following = (async () => {
        for await (const _ of store.follow({ signal: controller.signal })) {
          // Runs until aborted.
        }
      })();
      let listening = false;
      for (let attempt = 0; attempt < 100 && !listening; attempt++) {
        listening = (await store.status()).details['following'] === true;
        if (!listening) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(listening).toBe(true);
      controller.abort();
      await following;
    } finally {
      await store.close();
    }
  });

  it('reports compaction: the streams with a snapshot and the revisions their snapshots cover', async () => {
    const { store } = await openStore({ schema: fresh('status_compaction') });
    try {
      const events = Array.from({ length: 20 }, (_, n) => ({ type: 'A', data: { n } }));
      await store.append('a', events, { expectedRevision: 'no_stream' });
      await store.append('b', events, { expectedRevision: 'no_stream' });
      expect((await store.status()).details).toMatchObject({ compactedStreams: 0, compactedEvents: 0 });
      await store.compact('a', { revision: 15, state: { upTo: 15 }, identity: { stream: 'a', schemaVersion: 1 } });
      await store.compact('b', { revision: 5, state: { upTo: 5 }, identity: { stream: 'b', schemaVersion: 1 } });
      expect((await store.status()).details).toMatchObject({ compactedStreams: 2, compactedEvents: 20 });
      await store.deleteStream('a', { expectedRevision: 20 });
      expect((await store.status()).details).toMatchObject({ compactedStreams: 1, compactedEvents: 5 });
    } finally {
      await store.close();
    }
  });
});
