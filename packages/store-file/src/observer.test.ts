import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CorruptionError, InvalidInputError, type StoreObserver } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, logLines, randomStream, segmentsOf, withoutIndexSnapshots } from './test-support.fixture.js';

type Calls = { [K in keyof StoreObserver]-?: Parameters<NonNullable<StoreObserver[K]>>[0][] };

/** An observer that records every call. */
function recording(): { observer: StoreObserver; calls: Calls } {
  const calls: Calls = { appendCommitted: [], flushed: [], compacted: [], corruptionFound: [], followInterrupted: [], followResumed: [] };
  return {
    calls,
    observer: {
      appendCommitted: (value) => calls.appendCommitted.push(value),
      flushed: (value) => calls.flushed.push(value),
      compacted: (value) => calls.compacted.push(value),
      corruptionFound: (value) => calls.corruptionFound.push(value),
    },
  };
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
/** The bytes the stores report for an event: its serialized data and its type, in UTF-8. */
const bytesOf = (event: { type: string; data: unknown }) => Buffer.byteLength(JSON.stringify(event.data)) + Buffer.byteLength(event.type);

describe('fileStore({ observer })', () => {
  it('tells of each durable append and each group commit, with the bytes of the events’ data and type in UTF-8', async () => {
    const dir = freshDir();
    const { observer, calls } = recording();
    const store = await fileStore({ directory: dir, observer });
    const stream = randomStream();
    // Characters of two, three and four bytes in UTF-8, so a count of UTF-16 code units or of line bytes differs.
    const first = [1, 2, 3].map((n) => ({ type: 'Évènement', data: { n, text: 'ü€😀'.repeat(n) } }));
    await store.append(stream, first, { expectedRevision: 'no_stream' });
    expect(calls.appendCommitted).toEqual([{ stream, events: 3, bytes: sum(first.map(bytesOf)), durationMs: expect.any(Number) }]);
    // Concurrent appends share flushes: every append and byte is counted once.
    const more = Array.from({ length: 20 }, (_, i) => ({ type: 'E', data: { i, text: 'ß'.repeat(i) } }));
    await Promise.all(more.map((event) => store.append(stream, [event], { expectedRevision: 'any' })));
    // Writes that are not appends are not counted as appends.
    await store.putBlob(stream, new Uint8Array([1, 2, 3]));
    await store.compact(stream, { revision: 2, state: null, identity: { stream, schemaVersion: 1 } });
    await store.close();
    const total = sum(first.map(bytesOf)) + sum(more.map(bytesOf));
    expect(calls.appendCommitted).toHaveLength(21);
    expect(
      calls.appendCommitted
        .slice(1)
        .map((c) => c.bytes)
        .sort((a, b) => a - b),
    ).toEqual(more.map(bytesOf).sort((a, b) => a - b));
    expect(sum(calls.appendCommitted.map((c) => c.bytes))).toBe(total);
    expect(sum(calls.flushed.map((c) => c.events))).toBe(23);
    expect(sum(calls.flushed.map((c) => c.bytes))).toBe(total);
    expect(calls.flushed.length).toBeLessThan(21);
    // `appends` counts append calls (as the other stores do): the blob and the compaction are no appends.
    expect(sum(calls.flushed.map((c) => c.appends))).toBe(21);
    expect(calls.flushed.filter((c) => c.appends === 0)).toEqual([]);
    for (const { durationMs } of calls.appendCommitted) expect(durationMs).toBeGreaterThanOrEqual(0);
    for (const { syncMs } of calls.flushed) expect(syncMs).toBeGreaterThanOrEqual(0);
  });

  it('tells of a compaction: the stream, the snapshot revision and the events it dropped', async () => {
    const { observer, calls } = recording();
    const store = await fileStore({ directory: freshDir(), observer });
    const stream = randomStream();
    for (let i = 0; i < 10; i++) await store.append(stream, [{ type: 'E', data: i }], { expectedRevision: i });
    await store.compact(stream, { revision: 4, state: 4, identity: { stream, schemaVersion: 1 } });
    await store.compact(stream, { revision: 9, state: 9, identity: { stream, schemaVersion: 1 } });
    await store.close();
    expect(calls.compacted).toEqual([
      { stream, revision: 4, droppedEvents: 4, durationMs: expect.any(Number) },
      { stream, revision: 9, droppedEvents: 5, durationMs: expect.any(Number) },
    ]);
  });

  it('tells of damage found at open and by a read, with the segment and line', async () => {
    const dir = realpathSync(freshDir());
    const stream = randomStream();
    const writer = await fileStore({ directory: dir });
    for (let i = 0; i < 3; i++) await writer.append(stream, [{ type: 'E', data: `value-${i}` }], { expectedRevision: i });
    await writer.close();
    const [path] = segmentsOf(dir) as [string];
    expect(logLines(dir).map((line) => [line.path, line.line, line.payload.data])).toEqual([
      [path, 1, 'value-0'],
      [path, 2, 'value-1'],
      [path, 3, 'value-2'],
    ]);
    const text = readFileSync(path, 'utf8');
    // A flipped byte in the data of line 2, with a whole line after it: damage, not a torn tail.
    writeFileSync(path, text.replace('value-1', 'valuE-1'));
    // Opened as after a crash: with an index snapshot, open reads only the log after it.
    withoutIndexSnapshots(dir);

    for (const readOnly of [false, true]) {
      const atOpen = recording();
      await expect(fileStore({ directory: dir, readOnly, observer: atOpen.observer })).rejects.toBeInstanceOf(CorruptionError);
      expect(atOpen.calls.corruptionFound.map((c) => [c.error.file, c.error.line])).toEqual([[path, 2]]);
    }

    // Damage that lands after open is found by the read that meets it.
    writeFileSync(path, text);
    const byRead = recording();
    const view = await fileStore({ directory: dir, readOnly: true, observer: byRead.observer });
    writeFileSync(path, text.replace('value-2', 'valuE-2'));
    await expect((async () => collect((await view.read(stream)).events))()).rejects.toBeInstanceOf(CorruptionError);
    await view.close();
    expect(byRead.calls.corruptionFound.map((c) => [c.error.file, c.error.line])).toEqual([[path, 3]]);
  });

  it('refuses an observer whose hooks are not functions, and ignores hooks that throw', async () => {
    await expect(fileStore({ directory: freshDir(), observer: { flushed: 1 } as never })).rejects.toBeInstanceOf(InvalidInputError);
    const store = await fileStore({
      directory: freshDir(),
      observer: {
        appendCommitted: () => {
          throw new Error('observer failure');
        },
      },
    });
    expect((await store.append(randomStream(), [{ type: 'E', data: null }], { expectedRevision: 'no_stream' })).revision).toBe(1);
    await store.close();
  });
});
