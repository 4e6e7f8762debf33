import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError, type EventStore, type StreamId } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { eventsOf, freshDir, openFailure, randomStream, withoutCleanClose } from './test-support.fixture.js';

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);

/** A closed store whose stream holds four events appended one by one; resolves to the journal's line offsets. */
async function fourEvents(dir: string, stream: StreamId): Promise<number[]> {
  const store = await fileStore({ directory: dir });
  for (let n = 1; n <= 4; n++) await store.append(stream, [{ type: 'Noted', data: { n } }], { expectedRevision: n === 1 ? 'no_stream' : n - 1 });
  await store.close();
  const bytes = readFileSync(journalOf(dir, stream));
  const starts = [0];
  for (let at = bytes.indexOf(0x0a); at !== -1 && at + 1 < bytes.length; at = bytes.indexOf(0x0a, at + 1)) starts.push(at + 1);
  return starts;
}

const verifyOf = (store: EventStore) => (store.verify as NonNullable<EventStore['verify']>)();

describe('a journal cut by hand while the store was closed', () => {
  it.each([
    ['at a line boundary', (path: string, starts: number[]) => truncateSync(path, starts[3] as number)],
    ['to nothing', (path: string) => writeFileSync(path, '')],
  ])('%s, after a clean close: reads, verify and appends report it; nothing reads short', async (_label, cut) => {
    const dir = freshDir();
    const stream = randomStream();
    const starts = await fourEvents(dir, stream);
    cut(journalOf(dir, stream), starts);

    for (const readOnly of [true, false]) {
      const store = await fileStore({ directory: dir, readOnly });
      const failure = await eventsOf(store, stream).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure, `a ${readOnly ? 'view' : 'writer'} reads no fewer events without an error`).toBeInstanceOf(CorruptionError);
      expect((failure as CorruptionError).file).toBe(journalOf(dir, stream));
      expect((failure as CorruptionError).message).toMatch(/short of the 7\d\d bytes the store knows it holds/);
      const report = await verifyOf(store);
      expect(report.ok).toBe(false);
      expect(report.problems).toEqual([expect.objectContaining({ severity: 'error', file: journalOf(dir, stream), code: 'damaged_record' })]);
      if (!readOnly) {
        await expect(store.append(stream, [{ type: 'Noted', data: { n: 5 } }], { expectedRevision: 4 })).rejects.toThrow();
        await expect(store.append(stream, [{ type: 'Noted', data: { n: 4 } }], { expectedRevision: 3 })).rejects.toThrow();
      }
      await store.close();
    }
  });

  it('without the clean-close mark: the next writer refuses to open, naming the journal, instead of reusing the lost revisions', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const starts = await fourEvents(dir, stream);
    truncateSync(journalOf(dir, stream), starts[3] as number);
    withoutCleanClose(dir);

    const failure = await openFailure({ directory: dir });
    expect(failure).toBeInstanceOf(CorruptionError);
    expect((failure as CorruptionError).file).toBe(journalOf(dir, stream));
    expect((failure as CorruptionError).message).toMatch(/short of the 7\d\d bytes the manifest records/);
  });

  it('bytes without a newline added past its end after a clean close are a torn tail: the first append cuts them; with a newline they are damage', async () => {
    const dir = freshDir();
    const stream = randomStream();
    await fourEvents(dir, stream);
    const { appendFileSync, statSync } = await import('node:fs');
    const path = journalOf(dir, stream);
    const size = statSync(path).size;
    appendFileSync(path, '{"a write cut short');
    let store = await fileStore({ directory: dir });
    expect((await eventsOf(store, stream)).map((event) => event.revision)).toEqual([1, 2, 3, 4]);
    expect((await store.append(stream, [{ type: 'Noted', data: { n: 5 } }], { expectedRevision: 4 })).revision).toBe(5);
    expect(statSync(path).size).toBeGreaterThan(size);
    await store.close();
    store = await fileStore({ directory: dir });
    expect((await eventsOf(store, stream)).map((event) => event.revision)).toEqual([1, 2, 3, 4, 5]);
    await store.close();
    appendFileSync(path, 'not a record\n');
    store = await fileStore({ directory: dir });
    await expect(store.append(stream, [{ type: 'Noted', data: { n: 6 } }], { expectedRevision: 5 })).rejects.toBeInstanceOf(CorruptionError);
    await store.close();
  });

  it.each([
    ['a byte of its last line flipped', (bytes: Buffer, last: number) => (bytes[last + 80] as number) ^ 0x01],
    ['its last line overwritten with NUL bytes', () => 0],
  ])('%s after a clean close: the first append refuses to build on it, before writing anything', async (label, change) => {
    const dir = freshDir();
    const stream = randomStream();
    const starts = await fourEvents(dir, stream);
    const path = journalOf(dir, stream);
    const bytes = readFileSync(path);
    const last = starts[3] as number;
    if (label.includes('NUL')) bytes.fill(0, last, bytes.length);
    else bytes[last + 80] = change(bytes, last);
    writeFileSync(path, bytes);
    const store = await fileStore({ directory: dir });
    const failure = await store.append(stream, [{ type: 'Noted', data: { n: 5 } }], { expectedRevision: 4 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(CorruptionError);
    expect((failure as CorruptionError).file).toBe(path);
    expect((failure as CorruptionError).line).toBe(4);
    await store.close();
    expect(readFileSync(path)).toEqual(bytes);
  });

  it('overwritten with NUL bytes in place, without the clean-close mark: the next writer refuses to open instead of cutting it as a torn tail', async () => {
    const dir = freshDir();
    const stream = randomStream();
    await fourEvents(dir, stream);
    const path = journalOf(dir, stream);
    writeFileSync(path, Buffer.alloc(readFileSync(path).length));
    withoutCleanClose(dir);
    const failure = await openFailure({ directory: dir });
    expect(failure).toBeInstanceOf(CorruptionError);
    expect((failure as CorruptionError).message).toMatch(/whole records only up to byte 0 of the \d+ the manifest records/);
    expect(
      readFileSync(path).every((byte) => byte === 0),
      'nothing was cut',
    ).toBe(true);
  });

  it('a journal deleted by hand is reported by verify', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const kept = randomStream('kept');
    await fourEvents(dir, stream);
    const store = await fileStore({ directory: dir });
    await store.append(kept, [{ type: 'Noted', data: {} }], { expectedRevision: 'no_stream' });
    const { rmSync } = await import('node:fs');
    rmSync(journalOf(dir, stream));
    const report = await verifyOf(store);
    expect(report.problems).toEqual([expect.objectContaining({ severity: 'error', file: journalOf(dir, stream), line: 1 })]);
    expect(report.problems[0]?.message).toContain('the journal is missing');
    await store.close();
  });
});

describe('a stream file replaced by a directory while the store was closed', () => {
  it.each([['journal'], ['snapshot']])('its %s: a read rejects with a StorageError naming it, from a view and from a writer', async (kind) => {
    const dir = freshDir();
    const stream = randomStream();
    await fourEvents(dir, stream);
    if (kind === 'snapshot') {
      const store = await fileStore({ directory: dir });
      await store.compact(stream, { revision: 2, state: {}, identity: { stream, schemaVersion: 1 } });
      await store.close();
    }
    const path = kind === 'journal' ? journalOf(dir, stream) : join(dir, 'streams', `${stream}.snapshot.json`);
    const { mkdirSync, rmSync } = await import('node:fs');
    rmSync(path);
    mkdirSync(path);
    for (const readOnly of [true, false]) {
      const store = await fileStore({ directory: dir, readOnly });
      const failure = await eventsOf(store, stream).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure, readOnly ? 'view' : 'writer').toBeInstanceOf(StorageError);
      expect((failure as StorageError).message).toContain(path);
      await store.close();
    }
  });
});
