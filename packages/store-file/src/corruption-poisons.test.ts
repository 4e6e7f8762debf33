import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError, type EventStore, type StreamId } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, logLines, randomStream, type SegmentLine } from './test-support.fixture.js';

/**
 * Flips one byte of the JSON of `line` in its segment, keeping its length: its checksum no longer matches. 'data':
 * inside the event's data, the last member, which a stored read hands out as text without parsing it.
 */
function flipByteOf(line: SegmentLine, where: 'head' | 'data' = 'head'): void {
  const bytes = readFileSync(line.path);
  const at = line.offset + (where === 'head' ? 64 + 10 : line.bytes.length - 3);
  bytes[at] = bytes[at] === 0x41 ? 0x42 : 0x41;
  writeFileSync(line.path, bytes);
}

/**
 * What a read that meets the damaged `line` rejects with: a CorruptionError naming its segment, and the line
 * (by number, or by the byte it starts at).
 */
const damageAt = (line: SegmentLine) =>
  expect.toSatisfy(
    (error: unknown) =>
      error instanceof CorruptionError && error.file === line.path && (error.line === line.line || error.message.includes(`byte ${line.offset}`)),
    `a CorruptionError naming ${line.path}:${line.line} (byte ${line.offset})`,
  );

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

/** Once the damage is repaired, a reopened writer writes again: the refusal lasts only as long as the store object. */
async function writesAfterRepairAndReopen(dir: string, line: SegmentLine, stream: StreamId): Promise<void> {
  const bytes = readFileSync(line.path);
  line.bytes.copy(bytes, line.offset);
  writeFileSync(line.path, bytes);
  const reopened = await fileStore({ directory: dir });
  try {
    expect((await reopened.append(stream, [{ type: 'X', data: 1 }], { expectedRevision: 'any' })).revision).toBe(4);
  } finally {
    await reopened.close();
  }
}

/** A writer with one stream of three events (one batch: lines 1 to 3 of the log). */
async function threeEvents(): Promise<{ dir: string; store: EventStore; s: StreamId; lines: SegmentLine[] }> {
  const dir = freshDir();
  const store = await fileStore({ directory: dir });
  const s = randomStream();
  await store.append(
    s,
    [1, 2, 3].map((n) => ({ type: 'N', data: n })),
    { expectedRevision: 'no_stream' },
  );
  return { dir, store, s, lines: logLines(dir) };
}

describe('corruption found by a read makes the store refuse writes until it is reopened', () => {
  it('a damaged line found by read()', async () => {
    const { dir, store, s, lines } = await threeEvents();
    flipByteOf(lines[1] as SegmentLine);
    await expect(store.read(s).then((read) => collect(read.events))).rejects.toEqual(damageAt(lines[1] as SegmentLine));
    await refusesWrites(store, s);
    await store.close();
    await writesAfterRepairAndReopen(dir, lines[1] as SegmentLine, s);
  });

  it('a damaged line found by readStored() and readAllStored(), also when only its data is damaged', async () => {
    for (const where of ['head', 'data'] as const) {
      const { store, s, lines } = await threeEvents();
      flipByteOf(lines[1] as SegmentLine, where);
      const damage = damageAt(lines[1] as SegmentLine);
      await expect(
        store.readStored!(s).then((read) => collect(read.events)),
        where,
      ).rejects.toEqual(damage);
      await expect(collect(store.readAllStored!()), where).rejects.toEqual(damage);
      await refusesWrites(store, s);
      await store.close();
    }
  });

  it('a damaged line found by readAll()', async () => {
    const { store, s, lines } = await threeEvents();
    flipByteOf(lines[2] as SegmentLine);
    await expect(collect(store.readAll())).rejects.toEqual(damageAt(lines[2] as SegmentLine));
    await refusesWrites(store, s);
    await store.close();
  });

  it('a damaged $snapshot line found by read()', async () => {
    const { store, s, dir } = await threeEvents();
    await store.compact(s, { revision: 1, state: { kept: 'AAAA' }, identity: { stream: s, schemaVersion: 1 } });
    const snapshot = logLines(dir).find((line) => line.payload.type === '$snapshot') as SegmentLine;
    flipByteOf(snapshot);
    await expect(store.read(s)).rejects.toMatchObject({ code: 'corruption', file: snapshot.path });
    await refusesWrites(store, s);
    await store.close();
  });

  it("one blob's damaged bytes fail that read only; writes go on", async () => {
    const dir = freshDir();
    const store = await fileStore({ directory: dir });
    const s = randomStream();
    const sha = await store.putBlob(s, new Uint8Array([1, 2, 3]));
    const other = await store.putBlob(s, new Uint8Array([4, 5, 6]));
    writeFileSync(join(dir, 'blobs', sha), new Uint8Array([9, 9, 9]));
    await expect(store.getBlob(sha)).rejects.toMatchObject({ code: 'corruption', file: join(dir, 'blobs', sha) });
    expect(await store.getBlob(other)).toEqual(new Uint8Array([4, 5, 6]));
    expect(await store.append(s, [{ type: 'N', data: 1 }], { expectedRevision: 'no_stream' })).toMatchObject({ revision: 1 });
    await store.close();
  });
});
