import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, InvalidInputError, type StoreObserver, type StreamId } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, randomStream, withoutCleanClose } from './test-support.fixture.js';

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

const journalOf = (dir: string, stream: StreamId) => join(dir, 'streams', `${stream}.jsonl`);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe('fileStore({ observer })', () => {
  it('tells of each durable append and each group commit, with the bytes the journal grew by', async () => {
    const dir = freshDir();
    const { observer, calls } = recording();
    const store = await fileStore({ directory: dir, observer });
    const stream = randomStream();
    await store.append(
      stream,
      [1, 2, 3].map((n) => ({ type: 'E', data: { n } })),
      { expectedRevision: 'no_stream' },
    );
    expect(calls.appendCommitted).toEqual([{ stream, events: 3, bytes: statSync(journalOf(dir, stream)).size, durationMs: expect.any(Number) }]);
    // Concurrent appends share flushes: every append and byte is counted once.
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.append(stream, [{ type: 'E', data: i }], { expectedRevision: 'any' })));
    await store.close();
    const size = statSync(journalOf(dir, stream)).size;
    expect(calls.appendCommitted).toHaveLength(21);
    expect(sum(calls.appendCommitted.map((c) => c.bytes))).toBe(size);
    expect(sum(calls.flushed.map((c) => c.appends))).toBe(21);
    expect(sum(calls.flushed.map((c) => c.events))).toBe(23);
    expect(sum(calls.flushed.map((c) => c.bytes))).toBe(size);
    expect(calls.flushed.length).toBeLessThan(21);
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

  it('tells of damage found at open and by a read, with the file and line', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const writer = await fileStore({ directory: dir });
    for (let i = 0; i < 3; i++) await writer.append(stream, [{ type: 'E', data: `value-${i}` }], { expectedRevision: i });
    await writer.close();
    const path = journalOf(dir, stream);
    const text = readFileSync(path, 'utf8');
    // A flipped byte in the data of line 2.
    writeFileSync(path, text.replace('value-1', 'valuE-1'));
    // Opened as after a crash: after a clean close, open takes the files as the manifest records them.
    withoutCleanClose(dir);

    const atOpen = recording();
    await expect(fileStore({ directory: dir, observer: atOpen.observer })).rejects.toBeInstanceOf(CorruptionError);
    expect(atOpen.calls.corruptionFound).toHaveLength(1);
    expect(atOpen.calls.corruptionFound[0]?.error).toMatchObject({ file: path, line: 2 });

    // Damage that lands after open is found by the read that meets it.
    writeFileSync(path, text);
    const byRead = recording();
    const view = await fileStore({ directory: dir, readOnly: true, observer: byRead.observer });
    writeFileSync(path, text.replace('value-2', 'valuE-2'));
    await expect(collect((await view.read(stream)).events)).rejects.toBeInstanceOf(CorruptionError);
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
