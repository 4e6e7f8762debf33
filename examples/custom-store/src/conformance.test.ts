import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
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
});
// #endregion conformance

// The README says how many of the port's rules this store passes and skips; checked here against this run, so the
// numbers cannot go stale.
// biome-ignore lint/correctness/noEmptyPattern: vitest hands a hook the file only after a destructured context.
afterAll(({}, file) => {
  const states = { pass: 0, skip: 0, other: 0 };
  const visit = (tasks: readonly { type: string; tasks?: readonly unknown[]; result?: { state?: string } }[]): void => {
    for (const task of tasks) {
      if (task.type === 'suite') visit((task.tasks ?? []) as typeof tasks);
      else if (task.type === 'test') {
        const state = task.result?.state;
        if (state === 'pass' || state === 'skip') states[state]++;
        else states.other++;
      }
    }
  };
  visit(file.tasks);
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const claim = /runs the port's (\d+) rules, one test each: (\d+) pass and (\d+) are skipped/.exec(readme.replace(/\s+/g, ' '));
  expect(claim?.slice(1).map(Number)).toEqual([states.pass + states.skip + states.other, states.pass, states.skip]);
});
