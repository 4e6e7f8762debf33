import { expect, it, vi } from 'vitest';
import { foldStream, memoryStore, type StreamReducer } from '../index.js';

it('the README example of a versioned reducer folds a migrated snapshot and an upcast event', async () => {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  // #region versioning-example
  // Version 2 of a counter: its state `{ n }` became `{ total }`, and `Added`'s data went from a number to `{ amount }`.
  const counter: StreamReducer<{ total: number }> = {
    schemaVersion: 2,
    migrations: [{ from: 1, to: 2, migrate: (state) => ({ total: (state as { n: number }).n }) }],
    upcasters: { Added: [{ from: 1, to: 2, upcast: (data) => ({ amount: data }) }] },
    initial: () => ({ total: 0 }),
    apply: (state, event) => ({ total: state.total + (event.data as { amount: number }).amount }),
    toSnapshot: (state) => state,
    fromSnapshot: (state) => state as { total: number },
  };
  const store = memoryStore();
  // What version 1 left behind: an event of data version 1, compacted into a snapshot of state version 1 …
  await store.append(
    'counter-1',
    [
      { type: 'Added', data: 2 },
      { type: 'Added', data: 3 },
    ],
    { expectedRevision: 'no_stream' },
  );
  await store.compact('counter-1', { revision: 1, state: { n: 2 }, identity: { stream: 'counter-1', schemaVersion: 1 } });
  // … and what version 2 appends: its events name their data version.
  await store.append('counter-1', [{ type: 'Added', data: { amount: 5 }, schemaVersion: 2 }], { expectedRevision: 2 });
  console.log((await foldStream(store, 'counter-1', counter)).state); // { total: 10 }
  // #endregion versioning-example
  expect(log).toHaveBeenCalledWith({ total: 10 });
  log.mockRestore();
});
