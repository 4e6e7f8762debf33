import { describe, expect, it } from 'vitest';
import { ChangeIndex } from './change-index.js';
import { fileStore } from './index.js';
import { collect, freshDir, randomStream } from './test-support.fixture.js';

describe('the change index', () => {
  it('gives each item whose latest change is at or after a position once, skipping those changed only before it', () => {
    const index = new ChangeIndex<string>();
    index.seed(['c', 'a', 'b'], [30, 10, 20]);
    index.note('a', 31);
    index.note('d', 32);
    index.note('a', 33);
    expect([...index.from(1)]).toEqual(['b', 'c', 'd', 'a']);
    expect([...index.from(21)]).toEqual(['c', 'd', 'a']);
    expect([...index.from(32)]).toEqual(['d', 'a']);
    expect([...index.from(34)]).toEqual([]);
  });

  it('sorts what open found whether its positions are dense or far apart', () => {
    for (const spread of [1, 10_000_000]) {
      const index = new ChangeIndex<number>();
      const positions = [5, 0, 3, 9, 1].map((position) => position * spread);
      index.seed([0, 1, 2, 3, 4], positions);
      expect([...index.from(0)]).toEqual([1, 4, 2, 0, 3]);
      expect([...index.from(4 * spread)]).toEqual([0, 3]);
    }
  });

  it('stays right when entries left behind are compacted away', () => {
    const index = new ChangeIndex<number>();
    index.seed([], []);
    let position = 0;
    for (let round = 0; round < 50; round++) for (let item = 0; item < 100; item++) index.note(item, ++position);
    expect([...index.from(1)]).toEqual(Array.from({ length: 100 }, (_, item) => item));
    expect([...index.from(position - 9)]).toEqual([90, 91, 92, 93, 94, 95, 96, 97, 98, 99]);
  });

  it('stays right when items found at open are noted again and entries left behind are compacted away', () => {
    const index = new ChangeIndex<number>();
    index.seed(
      Array.from({ length: 2000 }, (_, item) => item),
      Array.from({ length: 2000 }, (_, item) => item + 1),
    );
    let position = 2000;
    for (let round = 0; round < 5; round++) for (let item = 0; item < 1000; item += 2) index.note(item, ++position);
    const odd = Array.from({ length: 1000 }, (_, k) => 2 * k + 1).filter((item) => item < 1000);
    const after = Array.from({ length: 1000 }, (_, item) => item + 1000);
    const even = Array.from({ length: 500 }, (_, k) => 2 * k);
    expect([...index.from(1)]).toEqual([...odd, ...after, ...even]);
    expect([...index.from(1500)]).toEqual([...after.slice(499), ...even]);
    expect([...index.from(position)]).toEqual([998]);
  });
});

describe("the file store's feed from a position", () => {
  it('shows what a read from the start shows past that position, for streams found at open and changed since', async () => {
    const dir = freshDir();
    const streams = Array.from({ length: 20 }, (_, i) => randomStream(`s${i}`));
    const first = await fileStore({ directory: dir });
    for (const stream of streams) await first.append(stream, [{ type: 'E', data: 1 }], { expectedRevision: 'no_stream' });
    await first.close();
    const store = await fileStore({ directory: dir });
    try {
      const [a, b, c, d] = streams as [string, string, string, string];
      const middle = (await store.append(a, [{ type: 'E', data: 2 }], { expectedRevision: 1 })).position;
      await store.compact(b, { revision: 1, state: {}, identity: { stream: b, schemaVersion: 1 } });
      await store.deleteStream(c, { expectedRevision: 1 });
      await store.append(d, [{ type: 'E', data: 2 }], { expectedRevision: 1 });
      await store.append(a, [{ type: 'E', data: 3 }], { expectedRevision: 2 });
      const all = await collect(store.readAll());
      for (const from of [2, 10, 20, middle, middle + 1, middle + 3, middle + 5]) {
        expect(await collect(store.readAll({ fromPosition: from })), `from ${from}`).toEqual(all.filter((event) => event.position >= from));
      }
    } finally {
      await store.close();
    }
  });
});
