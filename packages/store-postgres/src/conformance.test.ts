import { afterAll, describe, onTestFinished } from 'vitest';
import { describeEventStoreConformance } from '@sessionfold/conformance';
import type { EventStore, StoreObserver } from '@sessionfold/core/kernel';
import { postgresStore } from './index.js';
import { PG_URL, dropSchema, endAdmin, freshSchema } from './test-support.fixture.js';

const schemas = new WeakMap<EventStore, string>();

async function open(schema: string, clock?: () => Date, observer?: StoreObserver): Promise<EventStore> {
  const store = await postgresStore({ connectionString: PG_URL as string, schema, ...(clock ? { clock } : {}), ...(observer ? { observer } : {}) });
  schemas.set(store, schema);
  return store;
}

/** A fresh schema for the current test, dropped when it ends (the suite closes the store itself). */
function testSchema(): string {
  const schema = freshSchema('c');
  // An idle pool does not keep the drop waiting.
  onTestFinished(() => dropSchema(schema));
  return schema;
}

// Without a server the suite's tests are registered and skipped (tag `postgres`), so the run counts them.
describe('postgresStore', { tags: ['postgres'] }, () => {
  afterAll(endAdmin);
  describeEventStoreConformance('postgresStore', () => open(testSchema()), {
    // Another store object on the same schema, with its own pool: what another process sees.
    openSecond: async (store) => postgresStore({ connectionString: PG_URL as string, schema: schemas.get(store) as string }),
    withClock: (clock) => open(testSchema(), clock),
    withObserver: (observer) => open(testSchema(), undefined, observer),
    reopen: async (store) => {
      const schema = schemas.get(store);
      if (schema === undefined) throw new Error('not a store this suite opened');
      await store.close();
      return open(schema);
    },
  });
});
