import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { EventStore } from '@sessionfold/core/kernel';
import { describeEventStoreConformance } from '@sessionfold/conformance';
import { fileStore } from './index.js';

const root = mkdtempSync(join(tmpdir(), 'sessionfold-file-conformance-'));
const directories = new WeakMap<EventStore, string>();
let count = 0;
afterAll(() => rm(root, { recursive: true, force: true }));

async function open(directory: string): Promise<EventStore> {
  const store = await fileStore({ directory });
  directories.set(store, directory);
  return store;
}

describeEventStoreConformance('fileStore', () => open(join(root, `store-${++count}`)), {
  reopen: async (store) => {
    const directory = directories.get(store);
    if (directory === undefined) throw new Error('not a store this test opened');
    await store.close();
    return open(directory);
  },
  withClock: (clock) => fileStore({ directory: join(root, `store-${++count}`), clock }),
  withObserver: (observer) => fileStore({ directory: join(root, `store-${++count}`), observer }),
  // A read-only view of the same directory: what another process opens while the writer runs.
  openSecond: (store) => fileStore({ directory: directories.get(store) as string, readOnly: true }),
  // A view's follow polls every 50 ms and yields what has been on disk for 100 ms (plus opening a view).
  followDelayMs: 200,
});
