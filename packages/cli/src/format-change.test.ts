import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EventStore, RecordedEvent, StoredEvent } from '@sessionfold/core/kernel';
import { fileStore } from '@sessionfold/store-file';
import { sqliteStore } from '@sessionfold/store-sqlite';
import { storedChangeLine } from './format-change.js';
import { freshDir } from './test-support.fixture.js';

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** A store holding events whose JSON is easy to get wrong, a compacted stream and a deleted one. */
async function awkward(store: EventStore): Promise<void> {
  await store.append(
    'a',
    [
      { type: 'Ä "q" \\', data: { b: 1, 10: 'ten', 2: [null, -0, 1e21, 0.1] }, eventId: 'id "1"' },
      { type: 'B', data: 'line\n\u2028 😀', schemaVersion: 3 },
      { type: 'C', data: { ',"data":': null } },
    ],
    { expectedRevision: 'no_stream' },
  );
  await store.compact('a', { revision: 1, state: { n: 1 }, identity: { stream: 'a', schemaVersion: 1 } });
  await store.append('gone', [{ type: 'G', data: 1 }], { expectedRevision: 'no_stream' });
  await store.deleteStream('gone', { expectedRevision: 1 });
}

describe('a change read with its data as stored text prints as the same line as the change read parsed', () => {
  for (const [name, open] of [
    ['file', (dir: string) => fileStore({ directory: join(dir, 'store') })],
    ['sqlite', (dir: string) => sqliteStore({ path: join(dir, 'store.db') })],
  ] as const) {
    it(`on the ${name} store`, async () => {
      const store = await open(freshDir());
      try {
        await awkward(store);
        const parsed: RecordedEvent[] = await collect(store.readAll());
        const lines = (changes: StoredEvent[]) => changes.map((change) => storedChangeLine(change));
        const expected = parsed.map((change) => `${JSON.stringify(change)}\n`);
        expect(lines(await collect(store.readAllStored()))).toEqual(expected);
        const stream = (await collect((await store.read('a')).events)).map((change) => `${JSON.stringify(change)}\n`);
        expect(lines(await collect((await store.readStored('a')).events))).toEqual(stream);
      } finally {
        await store.close();
      }
    });
  }
});
