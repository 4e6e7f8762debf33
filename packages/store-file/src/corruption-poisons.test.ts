import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError, type EventStore, type StreamId } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, randomStream } from './test-support.fixture.js';

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);

/** Flips one byte of the JSON on `line` (1-based) of a file, keeping its length: its checksum no longer matches. */
function flipByteOnLine(path: string, line: number, where: 'head' | 'data' = 'head'): void {
  const bytes = readFileSync(path);
  let start = 0;
  for (let n = 1; n < line; n++) start = bytes.indexOf(0x0a, start) + 1;
  // 'data': inside the event's data, the last member, which a stored read hands out as text without parsing it.
  const at = where === 'head' ? start + 64 + 10 : bytes.indexOf(0x0a, start) - 2;
  bytes[at] = bytes[at] === 0x41 ? 0x42 : 0x41;
  writeFileSync(path, bytes);
}

async function refusesWrites(store: EventStore, stream: StreamId): Promise<void> {
  const other = randomStream('other');
  for (const write of [
    () => store.append(other, [{ type: 'X', data: 1 }], { expectedRevision: 'any' }),
    () => store.append(stream, [{ type: 'X', data: 1 }], { expectedRevision: 'any' }),
    () => store.compact(stream, { revision: 1, state: null, identity: { stream, schemaVersion: 1 } }),
    () => store.deleteStream(other, { expectedRevision: 'any' }),
    () => store.putBlob(other, new Uint8Array([1])),
  ]) {
    const error = await Promise.resolve()
      .then((): Promise<unknown> => write())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: 'storage_error', poisoned: true });
    expect((error as StorageError).cause).toBeInstanceOf(CorruptionError);
  }
}

/** A writer with one stream of three events. */
async function threeEvents(): Promise<{ dir: string; store: EventStore; s: StreamId }> {
  const dir = freshDir();
  const store = await fileStore({ directory: dir });
  const s = randomStream();
  await store.append(
    s,
    [1, 2, 3].map((n) => ({ type: 'N', data: n })),
    { expectedRevision: 'no_stream' },
  );
  return { dir, store, s };
}

describe('corruption found by a read makes the store refuse writes until it is reopened', () => {
  it('a damaged journal line found by read()', async () => {
    const { dir, store, s } = await threeEvents();
    flipByteOnLine(journalOf(dir, s), 2);
    await expect(collect((await store.read(s)).events)).rejects.toMatchObject({ code: 'corruption', file: journalOf(dir, s), line: 2 });
    await refusesWrites(store, s);
    await store.close();
  });

  it('a damaged journal line found by readStored() and readAllStored(), also when only its data is damaged', async () => {
    for (const where of ['head', 'data'] as const) {
      const { dir, store, s } = await threeEvents();
      flipByteOnLine(journalOf(dir, s), 2, where);
      const damage = { code: 'corruption', file: journalOf(dir, s), line: 2 };
      await expect(collect((await store.readStored!(s)).events), where).rejects.toMatchObject(damage);
      await expect(collect(store.readAllStored!()), where).rejects.toMatchObject(damage);
      await refusesWrites(store, s);
      await store.close();
    }
  });

  it('a damaged journal line found by readAll()', async () => {
    const { dir, store, s } = await threeEvents();
    flipByteOnLine(journalOf(dir, s), 3);
    await expect(collect(store.readAll())).rejects.toBeInstanceOf(CorruptionError);
    await refusesWrites(store, s);
    await store.close();
  });

  it('a damaged journal line found by compact()', async () => {
    const { dir, store, s } = await threeEvents();
    flipByteOnLine(journalOf(dir, s), 2);
    await expect(store.compact(s, { revision: 2, state: null, identity: { stream: s, schemaVersion: 1 } })).rejects.toBeInstanceOf(CorruptionError);
    await refusesWrites(store, s);
    await store.close();
  });

  it('a damaged snapshot found by read()', async () => {
    const { dir, store, s } = await threeEvents();
    await store.compact(s, { revision: 1, state: { kept: 'AAAA' }, identity: { stream: s, schemaVersion: 1 } });
    flipByteOnLine(join(dir, 'streams', `${s}.snapshot.json`), 1);
    await expect(store.read(s)).rejects.toBeInstanceOf(CorruptionError);
    await refusesWrites(store, s);
    await store.close();
  });

  it("one blob's damaged bytes fail that read only; writes go on", async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const s = randomStream();
    const sha = await store.putBlob(s, new Uint8Array([1, 2, 3]));
    writeFileSync(join(dir, 'blobs', sha), new Uint8Array([9, 9, 9]));
    await expect(store.getBlob(sha)).rejects.toBeInstanceOf(CorruptionError);
    expect(await store.append(s, [{ type: 'N', data: 1 }], { expectedRevision: 'no_stream' })).toMatchObject({ revision: 1 });
    await store.close();
  });
});
