import { describe, expect, it } from 'vitest';
import { InvalidInputError, type JsonValue } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { eventsOf, freshDir, randomStream } from './test-support.fixture.js';

/** `leaf` nested `depth` objects deep: {"d":{"d":…leaf}}. */
function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = { d: value };
  return value;
}

describe('validating event data nested deeper than the quick check goes', () => {
  it('accepts plain JSON at any depth and stores it unchanged', async () => {
    const store = await fileStore({ directory: freshDir() });
    const stream = randomStream();
    const data = nested(200, [1, 'two', null, { ok: true }]) as JsonValue;
    await store.append(stream, [{ type: 'Deep', data }], { expectedRevision: 'no_stream' });
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([data]);
    await store.close();
  });

  it('names a bad leaf deep down, and a cycle that starts deep down', async () => {
    const store = await fileStore({ directory: freshDir() });
    const stream = randomStream();
    const badLeaf = nested(100, { n: Number.NaN });
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    const deepCycle = nested(100, loop);
    const prefix = `data${'.d'.repeat(100)}`;
    for (const [data, path] of [
      [badLeaf, `${prefix}.n`],
      [deepCycle, `${prefix}.self`],
    ] as const) {
      const error = await store.append(stream, [{ type: 'Bad', data: data as JsonValue }], { expectedRevision: 'any' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toContain(`${path} is not JSON`);
    }
    expect((await store.read(stream)).revision).toBe(0);
    await store.close();
  });
});

describe('the event size limit', () => {
  it('counts UTF-8 bytes exactly for events whose characters could exceed it', async () => {
    const store = await fileStore({ directory: freshDir(), maxEventBytes: 300 });
    const stream = randomStream();
    // 98 two-byte characters: 196 bytes + 2 quotes + 1 byte of type = 199 bytes, though 3 × 101 characters > 300.
    const fits = 'é'.repeat(98);
    await store.append(stream, [{ type: 'T', data: fits }], { expectedRevision: 'no_stream' });
    // 150 two-byte characters: 300 bytes + 2 quotes + 1 = 303 bytes.
    await expect(store.append(stream, [{ type: 'T', data: 'é'.repeat(150) }], { expectedRevision: 1 })).rejects.toBeInstanceOf(InvalidInputError);
    expect((await eventsOf(store, stream)).map((e) => e.data)).toEqual([fits]);
    await store.close();
  });
});
