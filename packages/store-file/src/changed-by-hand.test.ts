import { appendFileSync, mkdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CorruptionError, StorageError, type EventStore, type StreamId, type VerifyProblem } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { eventsOf, freshDir, logLines, openFailure, randomStream, segmentsOf, withoutIndexSnapshots, type SegmentLine } from './test-support.fixture.js';

/** A closed store whose stream holds four events appended one by one: the four lines of its one segment. */
async function fourEvents(dir: string, stream: StreamId): Promise<SegmentLine[]> {
  const store = await fileStore({ directory: dir });
  for (let n = 1; n <= 4; n++) await store.append(stream, [{ type: 'Noted', data: { n } }], { expectedRevision: n === 1 ? 'no_stream' : n - 1 });
  await store.close();
  const lines = logLines(dir);
  expect(lines).toHaveLength(4);
  expect(segmentsOf(dir)).toHaveLength(1);
  return lines;
}

const verifyOf = (store: EventStore) => (store.verify as NonNullable<EventStore['verify']>)();

/** What `work` rejected with, or undefined. */
const failureOf = (work: () => Promise<unknown>): Promise<unknown> =>
  work().then(
    () => undefined,
    (error: unknown) => error,
  );

/** Flips a bit of a byte inside the JSON of `line`, in its segment, keeping its length. */
function flipByteOf(line: SegmentLine): void {
  const bytes = readFileSync(line.path);
  bytes[line.offset + 80] = (bytes[line.offset + 80] as number) ^ 0x01;
  writeFileSync(line.path, bytes);
}

/**
 * Verify's report on one damaged line of a stream appended to one event at a time: the line, named first; the
 * next line of the stream may be named too (it no longer follows anything), but not every line after it.
 */
function expectOneDamagedLine(problems: readonly VerifyProblem[], damaged: SegmentLine): void {
  expect(problems[0]).toMatchObject({ severity: 'error', code: 'damaged_record', file: damaged.path, line: damaged.line });
  expect(problems.filter((problem) => (problem.line ?? 0) > damaged.line + 1)).toEqual([]);
}

describe('a segment changed by hand under an open store', () => {
  it.each([
    ['at a line boundary', (path: string, lines: SegmentLine[]) => truncateSync(path, (lines[3] as SegmentLine).offset)],
    ['inside a line', (path: string, lines: SegmentLine[]) => truncateSync(path, (lines[3] as SegmentLine).offset + 30)],
    ['to nothing', (path: string) => writeFileSync(path, '')],
  ])('cut %s: reads and verify report it naming the segment; nothing reads short; the writer then refuses writes', async (_label, cut) => {
    for (const readOnly of [true, false]) {
      const dir = freshDir();
      const stream = randomStream();
      const lines = await fourEvents(dir, stream);
      const path = (lines[0] as SegmentLine).path;
      const store = await fileStore({ directory: dir, readOnly });
      cut(path, lines);
      const size = statSync(path).size;
      const failure = await failureOf(() => eventsOf(store, stream));
      expect(failure, `a ${readOnly ? 'view' : 'writer'} reads no fewer events without an error`).toBeInstanceOf(CorruptionError);
      expect((failure as CorruptionError).file).toBe(path);
      const report = await verifyOf(store);
      expect(report.ok, `verify through a ${readOnly ? 'view' : 'writer'}`).toBe(false);
      expect(report.problems).toContainEqual(expect.objectContaining({ severity: 'error', file: path }));
      if (!readOnly) {
        await expect(store.append(stream, [{ type: 'Noted', data: { n: 5 } }], { expectedRevision: 4 })).rejects.toMatchObject({ poisoned: true });
        expect(statSync(path).size, 'nothing was written after the cut').toBe(size);
      }
      await store.close();
    }
  });

  it('cut at a line boundary, then appended to before any read met the cut: the gap is damage that no read skips', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const lines = await fourEvents(dir, stream);
    const path = (lines[0] as SegmentLine).path;
    let store = await fileStore({ directory: dir });
    truncateSync(path, (lines[3] as SegmentLine).offset);
    await store.append(randomStream('other'), [{ type: 'Noted', data: {} }], { expectedRevision: 'no_stream' });
    await store.close();
    for (const snapshots of ['kept', 'removed']) {
      if (snapshots === 'removed') withoutIndexSnapshots(dir);
      const failure = await openFailure({ directory: dir });
      if (failure === undefined) {
        store = await fileStore({ directory: dir });
        const read = await failureOf(() => eventsOf(store, stream));
        await store.close();
        expect(read, snapshots).toBeInstanceOf(CorruptionError);
        expect((read as CorruptionError).file).toBe(path);
      } else {
        expect(failure, snapshots).toBeInstanceOf(CorruptionError);
        expect((failure as CorruptionError).file).toBe(path);
        expect((failure as CorruptionError).line).toBe(4);
      }
    }
  });

  it('a line flipped after open is found by the read and by verify, naming segment and line; the writer then refuses writes', async () => {
    for (const readOnly of [true, false]) {
      const dir = freshDir();
      const stream = randomStream();
      const lines = await fourEvents(dir, stream);
      const second = lines[1] as SegmentLine;
      const store = await fileStore({ directory: dir, readOnly });
      flipByteOf(second);
      const failure = await failureOf(() => eventsOf(store, stream));
      expect(failure).toBeInstanceOf(CorruptionError);
      expect((failure as CorruptionError).file).toBe(second.path);
      const named = failure as CorruptionError;
      expect(named.line === second.line || named.message.includes(`byte ${second.offset}`), 'the read names the line').toBe(true);
      expectOneDamagedLine((await verifyOf(store)).problems, second);
      if (!readOnly) await expect(store.append(stream, [{ type: 'Noted', data: { n: 5 } }], { expectedRevision: 4 })).rejects.toMatchObject({ poisoned: true });
      await store.close();
    }
  });

  it('a segment deleted under the store is reported by verify, naming it', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const lines = await fourEvents(dir, stream);
    const path = (lines[0] as SegmentLine).path;
    const store = await fileStore({ directory: dir, readOnly: true });
    rmSync(path);
    const report = await verifyOf(store);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([expect.objectContaining({ severity: 'error', file: path })]);
    expect(report.problems[0]?.message).toContain('missing');
    await store.close();
  });
});

describe('a segment changed by hand while the store was closed', () => {
  it('bytes without a newline added past its end are a torn tail: the next writer cuts them; with a newline they are damage, left in place', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const lines = await fourEvents(dir, stream);
    const path = (lines[0] as SegmentLine).path;
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
    const before = readFileSync(path);
    const failure = await openFailure({ directory: dir });
    expect(failure).toBeInstanceOf(CorruptionError);
    expect((failure as CorruptionError).file).toBe(path);
    expect((failure as CorruptionError).line).toBe(6);
    expect(readFileSync(path)).toEqual(before);
  });

  it.each([['kept'], ['removed']])(
    'a byte of a committed line flipped (index snapshots %s): the open or the read fails naming the segment, verify names the line',
    async (snapshots) => {
      const dir = freshDir();
      const stream = randomStream();
      const lines = await fourEvents(dir, stream);
      const second = lines[1] as SegmentLine;
      flipByteOf(second);
      if (snapshots === 'removed') withoutIndexSnapshots(dir);
      for (const readOnly of [true, false]) {
        const opened = await fileStore({ directory: dir, readOnly }).catch((error: unknown) => error);
        if (opened instanceof Error) {
          expect(opened).toBeInstanceOf(CorruptionError);
          expect(opened).toMatchObject({ file: second.path, line: 2 });
          continue;
        }
        const store = opened as EventStore;
        const failure = await failureOf(() => eventsOf(store, stream));
        expect(failure).toBeInstanceOf(CorruptionError);
        expect((failure as CorruptionError).file).toBe(second.path);
        expectOneDamagedLine((await verifyOf(store)).problems, second);
        await store.close();
      }
    },
  );

  it('a segment replaced by a directory: the open or the read rejects with a StorageError naming it, from a view and from a writer', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const lines = await fourEvents(dir, stream);
    const path = (lines[0] as SegmentLine).path;
    rmSync(path);
    mkdirSync(path);
    for (const readOnly of [true, false]) {
      const opened = await fileStore({ directory: dir, readOnly }).catch((error: unknown) => error);
      let failure = opened;
      if (!(opened instanceof Error)) {
        failure = await failureOf(() => eventsOf(opened as EventStore, stream));
        await (opened as EventStore).close();
      }
      expect(failure, readOnly ? 'view' : 'writer').toBeInstanceOf(StorageError);
      expect((failure as StorageError).message).toContain(path);
    }
  });
});
