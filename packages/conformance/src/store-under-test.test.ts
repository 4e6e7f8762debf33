import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { memoryStore } from '@sessionfold/core/kernel';
import { describe, expect, it } from 'vitest';
import { propertyTestEnv } from './property-env.js';
import { storeLifecycle, type StoreUnderTest } from './store-under-test.js';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('storeLifecycle', () => {
  it('a store that is not durable is handed back on reopen, as it is', async () => {
    const lifecycle = storeLifecycle({ name: 'memory', durable: false, open: async () => memoryStore() });
    const store = await lifecycle.open();
    expect(await lifecycle.reopen(store)).toBe(store);
    await lifecycle.dispose(store);
  });

  it('a durable store reopens on the same directory, and dispose removes it after what the store kept elsewhere', async () => {
    const dirs: string[] = [];
    const disposed: string[] = [];
    const described: StoreUnderTest = {
      name: 'fake',
      durable: true,
      async open(dir) {
        dirs.push(dir);
        await writeFile(join(dir, 'marker'), 'x');
        return memoryStore();
      },
      async dispose(dir) {
        expect(await exists(dir)).toBe(true);
        disposed.push(dir);
      },
    };
    const lifecycle = storeLifecycle(described);
    const first = await lifecycle.open();
    const second = await lifecycle.reopen(first);
    expect(second).not.toBe(first);
    expect(new Set(dirs).size).toBe(1);
    await lifecycle.dispose(second);
    expect(disposed).toEqual(dirs.slice(0, 1));
    expect(await exists(dirs[0] as string)).toBe(false);
  });
});

describe('propertyTestEnv', () => {
  it('reads every property-test variable, and leaves out what is unset or empty', () => {
    expect(
      propertyTestEnv({
        SESSIONFOLD_PROPERTY_RUNS: '40',
        SESSIONFOLD_PROPERTY_MAX_CALLS: '9',
        SESSIONFOLD_PROPERTY_SEED: '7',
        SESSIONFOLD_PROPERTY_PATH: '1:0',
        SESSIONFOLD_PROPERTY_REPLAY_PATH: 'AB',
      }),
    ).toEqual({ runs: 40, maxCommands: 9, seed: 7, path: '1:0', replayPath: 'AB' });
    expect(propertyTestEnv({ SESSIONFOLD_PROPERTY_RUNS: '', SESSIONFOLD_PROPERTY_SEED: undefined })).toEqual({});
  });
});
