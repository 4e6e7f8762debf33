import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from './schema.js';
import { PG_URL, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

describe.skipIf(PG_URL === undefined)('postgresStore: status details', () => {
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
});
