import { describe, expect, it } from 'vitest';
import { InvalidInputError, memoryStore } from '@sessionfold/core';

async function feedOf(store: ReturnType<typeof memoryStore>): Promise<unknown[]> {
  const records: unknown[] = [];
  for await (const record of store.readAll()) records.push(record);
  return records;
}

describe('memoryStore', () => {
  it('follow refuses a keepAlive that is not a boolean, naming the option', async () => {
    const store = memoryStore();
    const follow = async () => {
      for await (const _ of store.follow({ keepAlive: 'no' as unknown as boolean })) break;
    };
    await expect(follow()).rejects.toMatchObject({ code: 'invalid_input', field: 'keepAlive' });
  });

  it('appends and reads back a stream', async () => {
    const store = memoryStore();
    await store.append('s-1', [{ type: 'A', data: { n: 1 } }], { expectedRevision: 'no_stream' });
    const read = await store.read('s-1');
    const events = [];
    for await (const e of read.events) events.push(e);
    expect(events.map((e) => e.data)).toEqual([{ n: 1 }]);
  });

  it.each([
    ['an invalid Date', () => new Date(Number.NaN)],
    ['something that is not a Date', () => '2026-01-01' as unknown as Date],
    [
      'a throw',
      (): Date => {
        throw new Error('no time');
      },
    ],
  ])('a clock answering %s makes every write InvalidInputError (field clock) and changes nothing', async (_label, broken) => {
    let clock: () => Date = () => new Date(0);
    const store = memoryStore({ clock: () => clock() });
    await store.append('s-1', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await store.append('s-2', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const before = await feedOf(store);
    clock = broken;
    const writes: Array<() => Promise<unknown>> = [
      () => store.append('s-1', [{ type: 'B', data: 2 }], { expectedRevision: 1 }),
      () => store.compact('s-1', { revision: 1, state: {}, identity: { stream: 's-1', schemaVersion: 1 } }),
      () => store.restoreStream('s-3', { revision: 1, state: {}, identity: { stream: 's-3', schemaVersion: 1 } }),
      () => store.deleteStream('s-2', { expectedRevision: 1 }),
    ];
    for (const write of writes) await expect(write()).rejects.toSatisfy((error) => error instanceof InvalidInputError && error.field === 'clock');
    expect(await feedOf(store)).toEqual(before);
    clock = () => new Date(0);
    expect(await store.append('s-1', [{ type: 'B', data: 2 }], { expectedRevision: 1 })).toEqual({ revision: 2, position: 3 });
  });
});
