import { openSync, closeSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeFileSystem } from './fs-layer.js';
import { eventPayload, frameLine } from './journal-codec.js';
import { LineReader } from './journal-reader.js';
import { freshDir } from './test-support.fixture.js';

/** A journal of `count` event lines of `stream`, and its size in bytes. */
function journal(count: number): { path: string; size: number } {
  const path = join(freshDir(), 'j.jsonl');
  const text = Array.from({ length: count }, (_, i) =>
    frameLine(eventPayload('s', i + 1, i + 1, '2026-01-01T00:00:00.000Z', 'T', undefined, false, JSON.stringify({ i }))),
  );
  writeFileSync(path, text.join(''));
  return { path, size: Buffer.byteLength(text.join('')) };
}

/** Every revision `reader` visits, calling `prefetch` whenever `during` says so (also while a visit waits). */
async function revisions(reader: LineReader, during: () => void): Promise<number[]> {
  const seen: number[] = [];
  for (;;) {
    const visiting = reader.visit((value) => seen.push((value as { revision: number }).revision));
    during();
    if (!(await visiting)) return seen;
    during();
  }
}

describe('LineReader', () => {
  it('reads every line once in chunks growing from the first size, prefetched or not, also when a prefetch comes while a visit waits', async () => {
    const { path, size } = journal(2000);
    const expected = Array.from({ length: 2000 }, (_, i) => i + 1);
    for (const prefetching of [false, true]) {
      const fd = openSync(path, 'r');
      try {
        const reader = new LineReader(nodeFileSystem, fd, path, 0, size, 1, 16 * 1024, 512);
        expect(await revisions(reader, () => prefetching && reader.prefetch())).toEqual(expected);
        await reader.settled();
        expect(reader.tail.length).toBe(0);
      } finally {
        closeSync(fd);
      }
    }
  });
});
