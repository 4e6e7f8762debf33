import { randomUUID } from 'node:crypto';
import { compactStream, copyStore, foldStream, memoryStore, type EventStore, type JsonValue, type StreamReducer } from '@sessionfold/core/kernel';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { PROPERTY_RUNS, collect, freshPath } from './test-support.fixture.js';

/** Folds a stream into the list of what happened in it: enough to tell any two histories apart. */
const history: StreamReducer<JsonValue[]> = {
  schemaVersion: 1,
  initial: () => [],
  apply: (state, event) => [...state, [event.revision, event.type, event.data, event.eventId ?? null]],
  toSnapshot: (state) => state,
  fromSnapshot: (state) => state as JsonValue[],
};

type Step =
  | { kind: 'append'; stream: number; events: { type: string; data: JsonValue; eventId?: string }[] }
  | { kind: 'compact'; stream: number }
  | { kind: 'delete'; stream: number }
  | { kind: 'blob'; stream: number; bytes: number[] };

const stream = fc.integer({ min: 0, max: 4 });
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      stream,
      events: fc.array(
        fc.record(
          { type: fc.constantFrom('Opened', 'Noted'), data: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>, eventId: fc.uuid() },
          { requiredKeys: ['type', 'data'] },
        ),
        { minLength: 1, maxLength: 4 },
      ),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ kind: fc.constant('compact' as const), stream }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('delete' as const), stream }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('blob' as const), stream, bytes: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 64 }) }), weight: 2 },
);

async function build(store: EventStore, steps: readonly Step[], names: readonly string[]): Promise<void> {
  for (const item of steps) {
    const name = names[item.stream] as string;
    const revision = (await store.read(name)).revision;
    if (item.kind === 'append') await store.append(name, item.events, { expectedRevision: revision === 0 ? 'no_stream' : revision });
    if (item.kind === 'compact') await compactStream(store, name, history);
    if (item.kind === 'delete') await store.deleteStream(name, { expectedRevision: revision });
    if (item.kind === 'blob') await store.putBlob(name, Uint8Array.from(item.bytes));
  }
}

/** Everything a reader of the store can tell about it, apart from positions and commit times. */
async function contents(store: EventStore): Promise<unknown> {
  const streams = await collect(store.streams());
  return Promise.all(
    streams.map(async ({ stream: name, revision }) => {
      const blobs = await collect(store.blobs(name));
      return {
        name,
        revision,
        folded: await foldStream(store, name, history),
        blobs: await Promise.all(blobs.map(async (sha) => [sha, Array.from((await store.getBlob(sha)) ?? [])])),
      };
    }),
  );
}

async function feed(store: EventStore): Promise<unknown[]> {
  return (await collect(store.readAll())).map(({ recordedAt: _recordedAt, ...record }) => record);
}

describe('copyStore through the SQLite store', () => {
  it('memory → SQLite → memory folds every stream identically, and copying twice changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const run = randomUUID().slice(0, 8);
        const names = Array.from({ length: 5 }, (_, index) => `${run}-session-${index}`);
        const source = memoryStore();
        await build(source, steps, names);
        const path = freshPath();
        const sqlite = await sqliteStore({ path });
        const back = memoryStore();
        try {
          await copyStore(source, sqlite);
          await copyStore(sqlite, back);
          const expected = await contents(source);
          expect(await contents(sqlite)).toEqual(expected);
          expect(await contents(back)).toEqual(expected);

          const feedBefore = await feed(sqlite);
          const again = await copyStore(source, sqlite);
          expect(again.events).toBe(0);
          expect(again.unchanged).toBe(again.streams);
          expect(await feed(sqlite)).toEqual(feedBefore);
          expect(await contents(sqlite)).toEqual(expected);
        } finally {
          await sqlite.close();
        }
        // What was copied is on disk, not only in the connection that wrote it.
        const reopened = await sqliteStore({ path });
        expect(await contents(reopened)).toEqual(await contents(source));
        await reopened.close();
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });
});
