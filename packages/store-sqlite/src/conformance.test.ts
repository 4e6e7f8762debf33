import { describeEventStoreConformance } from '@sessionfold/conformance';
import type { EventStore } from '@sessionfold/core/kernel';
import { sqliteStore } from './index.js';
import { freshPath } from './test-support.fixture.js';

const paths = new WeakMap<EventStore, string>();

/** Opens a store and remembers its file, so `reopen` can open the same file again. */
async function open(path: string): Promise<EventStore> {
  const store = await sqliteStore({ path });
  paths.set(store, path);
  return store;
}

describeEventStoreConformance('sqliteStore', () => open(freshPath()), {
  reopen: async (store) => {
    await store.close();
    const path = paths.get(store);
    if (path === undefined) throw new Error('not a store this suite opened');
    return open(path);
  },
  withClock: (clock) => sqliteStore({ path: freshPath(), clock }),
  withObserver: (observer) => sqliteStore({ path: freshPath(), observer }),
  // Another connection on the same file: what another process sees.
  openSecond: async (store) => sqliteStore({ path: paths.get(store) as string }),
});
