import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { EventStore } from '@sessionfold/core/kernel';
import { describeEventStoreConformance } from '@sessionfold/conformance';
import { jsonLinesStore } from './json-lines-store.js';

const root = mkdtempSync(join(tmpdir(), 'sessionfold-json-lines-'));
afterAll(() => rm(root, { recursive: true, force: true }));
let count = 0;
const freshFile = () => join(root, `store-${++count}.jsonl`);
const files = new WeakMap<EventStore, string>();
const open = (file: string) => {
  const store = jsonLinesStore({ file, maxEventBytes: 64 * 1024 });
  files.set(store, file);
  return store;
};

// #region conformance
describeEventStoreConformance('jsonLinesStore', () => open(freshFile()), {
  reopen: async (store) => {
    await store.close();
    return open(files.get(store) as string);
  },
  withClock: (clock) => jsonLinesStore({ file: freshFile(), maxEventBytes: 64 * 1024, clock }),
  maxEventBytes: 64 * 1024,
  // The optional port members this store leaves out: the suite skips their rules and says so.
  verify: false,
  follow: false,
  checkpoints: false,
  status: false,
});
// #endregion conformance
