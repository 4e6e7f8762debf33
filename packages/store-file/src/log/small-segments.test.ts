import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { EventStore } from '@sessionfold/core/kernel';
import { describeEventStoreConformance } from '@sessionfold/conformance';
import { fileStore } from '../index.js';
import { setSegmentBytesForTests } from './log-writer.js';

// The whole contract again with segments sealed every 2 KiB: reads, the feed and reopens cross segment
// boundaries, and compactions and deletions leave sealed segments dead enough to be cleaned in the background.
const root = mkdtempSync(join(tmpdir(), 'sessionfold-small-segments-'));
const directories = new WeakMap<EventStore, string>();
let count = 0;
let previous: number;
beforeAll(() => {
  previous = setSegmentBytesForTests(2048);
});
afterAll(async () => {
  setSegmentBytesForTests(previous);
  await rm(root, { recursive: true, force: true });
});

async function open(directory: string): Promise<EventStore> {
  const store = await fileStore({ directory });
  directories.set(store, directory);
  return store;
}

describeEventStoreConformance('fileStore with small segments', () => open(join(root, `store-${++count}`)), {
  reopen: async (store) => {
    const directory = directories.get(store);
    if (directory === undefined) throw new Error('not a store this test opened');
    await store.close();
    return open(directory);
  },
  openSecond: (store) => fileStore({ directory: directories.get(store) as string, readOnly: true }),
  followDelayMs: 200,
});
