import { describe, expect, it } from 'vitest';
import { compactStreamKeeping, foldStream, type StreamReducer } from './fold.js';
import { memoryStore } from './memory-store.js';
import type { EventStore } from './port.js';

/** A stream's state: the numbers appended to it, in order. */
const numbers: StreamReducer<number[]> = {
  schemaVersion: 1,
  initial: () => [],
  apply: (state, event) => [...state, (event.data as { n: number }).n],
  toSnapshot: (state) => state,
  fromSnapshot: (state) => state as number[],
};

async function appendNumbers(store: EventStore, stream: string, from: number, to: number): Promise<void> {
  for (let n = from; n <= to; n++) await store.append(stream, [{ type: 'N', data: { n }, eventId: `e${n}` }], { expectedRevision: n - 1 });
}

describe('compactStreamKeeping', () => {
  it('snapshots the stream at its head minus keepEvents, so the newest events stay events with their ids', async () => {
    const store = memoryStore();
    await appendNumbers(store, 's', 1, 10);
    expect(await compactStreamKeeping(store, 's', numbers, 3)).toEqual({ revision: 7, droppedEvents: 7 });
    const read = await store.read('s');
    expect(read.snapshot).toMatchObject({ revision: 7, state: [1, 2, 3, 4, 5, 6, 7] });
    const kept = [];
    for await (const event of read.events) kept.push(event.revision);
    expect(kept).toEqual([8, 9, 10]);
    expect((await foldStream(store, 's', numbers)).state).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // A retry of a kept event's append is still recognised.
    expect(await store.append('s', [{ type: 'N', data: { n: 9 }, eventId: 'e9' }], { expectedRevision: 10 })).toMatchObject({ revision: 9 });

    await appendNumbers(store, 's', 11, 12);
    expect(await compactStreamKeeping(store, 's', numbers, 3)).toEqual({ revision: 9, droppedEvents: 2 });
    expect((await foldStream(store, 's', numbers)).state).toEqual(Array.from({ length: 12 }, (_, index) => index + 1));
  });

  it('does nothing when the snapshot already covers what it would drop, or the stream is missing', async () => {
    const store = memoryStore();
    expect(await compactStreamKeeping(store, 'missing', numbers, 0)).toEqual({ revision: 0, droppedEvents: 0 });
    await appendNumbers(store, 's', 1, 5);
    expect(await compactStreamKeeping(store, 's', numbers, 5)).toEqual({ revision: 0, droppedEvents: 0 });
    expect(await compactStreamKeeping(store, 's', numbers, 1)).toEqual({ revision: 4, droppedEvents: 4 });
    expect(await compactStreamKeeping(store, 's', numbers, 2)).toEqual({ revision: 4, droppedEvents: 0 });
    expect((await store.read('s')).snapshot?.revision).toBe(4);
  });
});
