import { describe, expect, it } from 'vitest';
import { compactStream, copyStore, foldStream, InvalidInputError, memoryStore, type EventStore, type StreamReducer } from '@sessionfold/core';
import { compactStreamKeeping } from './fold.js';

/** Counts events; `onApply` runs before each one is applied. */
const counter = (onApply: (n: number) => void = () => undefined): StreamReducer<number> => ({
  schemaVersion: 1,
  initial: () => 0,
  apply: (state) => {
    onApply(state + 1);
    return state + 1;
  },
  toSnapshot: (state) => state,
  fromSnapshot: (state) => state as number,
});

async function storeWith(streams: Record<string, number>): Promise<EventStore> {
  const store = memoryStore();
  for (const [stream, count] of Object.entries(streams)) {
    await store.append(
      stream,
      Array.from({ length: count }, (_, n) => ({ type: 'E', data: n, eventId: `${stream}-${n}` })),
      { expectedRevision: 'no_stream' },
    );
  }
  return store;
}

const reasonOf = async (work: Promise<unknown>) =>
  work.then(
    () => 'resolved',
    (error: unknown) => error,
  );

describe('AbortSignal on the long kernel operations', () => {
  it("foldStream stops between events and rejects with the signal's reason", async () => {
    const store = await storeWith({ s: 10 });
    const controller = new AbortController();
    const reason = new Error('enough');
    const applied: number[] = [];
    const folding = foldStream(
      store,
      's',
      counter((n) => (applied.push(n), n === 3 && controller.abort(reason))),
      { signal: controller.signal },
    );
    expect(await reasonOf(folding)).toBe(reason);
    expect(applied).toEqual([1, 2, 3]);
    expect(await foldStream(store, 's', counter(), { signal: new AbortController().signal })).toEqual({ state: 10, revision: 10, exists: true });
  });

  it('a signal a timer fires stops a fold or a copy over a store that answers at once (the loop lets timers run)', async () => {
    const store = memoryStore();
    for (let n = 0; n < 40; n++) {
      await store.append(
        's',
        Array.from({ length: 5000 }, (_, i) => ({ type: 'E', data: i })),
        { expectedRevision: n === 0 ? 'no_stream' : n * 5000 },
      );
    }
    // Slow enough per event that 200,000 of them take far longer than the timer.
    const slow = counter(() => {
      for (let spin = 0; spin < 200; spin++) Math.sqrt(spin);
    });
    for (const work of [
      (signal: AbortSignal) => foldStream(store, 's', slow, { signal }),
      (signal: AbortSignal) => copyStore(store, memoryStore(), { signal }),
    ]) {
      const controller = new AbortController();
      const reason = new Error('timer');
      setTimeout(() => controller.abort(reason), 5);
      expect(await reasonOf(work(controller.signal))).toBe(reason);
    }
  });

  it('compactStream and compactStreamKeeping stopped mid-fold leave the stream as it was', async () => {
    const store = await storeWith({ s: 10 });
    for (const compact of [
      (signal: AbortSignal, reducer: StreamReducer<number>) => compactStream(store, 's', reducer, { signal }),
      (signal: AbortSignal, reducer: StreamReducer<number>) => compactStreamKeeping(store, 's', reducer, 2, { signal }),
    ]) {
      const controller = new AbortController();
      const reason = new Error('stop');
      expect(
        await reasonOf(
          compact(
            controller.signal,
            counter((n) => n === 5 && controller.abort(reason)),
          ),
        ),
      ).toBe(reason);
      const read = await store.read('s');
      expect(read.snapshot).toBeUndefined();
      expect(read.revision).toBe(10);
    }
    expect(await compactStream(store, 's', counter(), { signal: new AbortController().signal })).toBe(10);
  });

  it('copyStore stopped between streams continues from there when run again', async () => {
    const from = await storeWith({ a: 3, b: 4, c: 5 });
    const to = memoryStore();
    const controller = new AbortController();
    const reason = new Error('later');
    const copying = copyStore(from, to, { signal: controller.signal, onProgress: (_, stream) => stream === 'a' && controller.abort(reason) });
    expect(await reasonOf(copying)).toBe(reason);
    expect((await to.read('a')).revision).toBe(3);
    expect((await to.read('b')).revision).toBe(0);
    expect(await copyStore(from, to)).toEqual({ streams: 3, events: 9, blobs: 0, unchanged: 1 });
  });

  it('copyStore stopped between batches leaves whole batches, and the next copy appends the rest once', async () => {
    const from = await storeWith({ s: 10 });
    const to = memoryStore();
    const controller = new AbortController();
    const reason = new Error('mid-stream');
    // The destination is a real store; its second append fires the signal once it has committed.
    let appends = 0;
    const watched: EventStore = Object.create(to, {
      append: {
        value: async (...args: Parameters<EventStore['append']>) => {
          const result = await to.append(...args);
          if (++appends === 2) controller.abort(reason);
          return result;
        },
      },
    });
    expect(await reasonOf(copyStore(from, watched, { signal: controller.signal, batchSize: 3 }))).toBe(reason);
    expect((await to.read('s')).revision).toBe(6);
    expect(await copyStore(from, to, { batchSize: 3 })).toEqual({ streams: 1, events: 4, blobs: 0, unchanged: 0 });
    const copied: unknown[] = [];
    for await (const event of (await to.read('s')).events) copied.push([event.revision, event.eventId]);
    expect(copied).toEqual(Array.from({ length: 10 }, (_, n) => [n + 1, `s-${n}`]));
  });

  it('a signal fired before the call rejects at once with its reason and writes nothing', async () => {
    const from = await storeWith({ s: 2 });
    const to = memoryStore();
    const reason = new Error('already');
    const signal = AbortSignal.abort(reason);
    expect(await reasonOf(copyStore(from, to, { signal }))).toBe(reason);
    expect(await reasonOf(foldStream(from, 's', counter(), { signal }))).toBe(reason);
    expect(await reasonOf(compactStream(from, 's', counter(), { signal }))).toBe(reason);
    expect(await reasonOf(compactStreamKeeping(from, 's', counter(), 1, { signal }))).toBe(reason);
    expect((await to.read('s')).revision).toBe(0);
    expect((await from.read('s')).snapshot).toBeUndefined();
  });

  it('a signal that is not an AbortSignal is InvalidInputError naming it', async () => {
    const store = await storeWith({ s: 1 });
    const signal = { aborted: false } as unknown as AbortSignal;
    for (const work of [
      copyStore(store, memoryStore(), { signal }),
      foldStream(store, 's', counter(), { signal }),
      compactStream(store, 's', counter(), { signal }),
      compactStreamKeeping(store, 's', counter(), 0, { signal }),
    ]) {
      const error = await reasonOf(work);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).field).toBe('signal');
    }
  });
});
