import { appendFileSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventStore, VerifyProblem } from '@sessionfold/core/kernel';
import { nodeFileSystem, type FileSystem } from './fs-layer.js';
import { fileStore } from './index.js';
import { frameLine } from './journal-codec.js';
import { setSegmentBytesForTests } from './log/log-writer.js';
import { freshDir, logLines, segmentsOf, type SegmentLine } from './test-support.fixture.js';

/** What the segment size was before a test made segments small. */
let defaultSegmentBytes: number | undefined;
afterEach(() => {
  if (defaultSegmentBytes !== undefined) setSegmentBytesForTests(defaultSegmentBytes);
  defaultSegmentBytes = undefined;
});

/**
 * A closed store: two streams of three events (one batch each), one stream compacted, a blob; returns its
 * directory. The log's lines: a 1–3, b 4–6, c's event 7, c's $snapshot 8, a's blob owner 9.
 */
async function written(): Promise<string> {
  const directory = freshDir();
  const store = await fileStore({ directory });
  await store.append(
    'a',
    [1, 2, 3].map((n) => ({ type: 'N', data: { n } })),
    { expectedRevision: 'no_stream' },
  );
  await store.append(
    'b',
    [1, 2, 3].map((n) => ({ type: 'N', data: { n } })),
    { expectedRevision: 'no_stream' },
  );
  await store.append('c', [{ type: 'N', data: 0 }], { expectedRevision: 'no_stream' });
  await store.compact('c', { revision: 1, state: { n: 0 }, identity: { stream: 'c', schemaVersion: 1 } });
  await store.putBlob('a', new Uint8Array([1, 2, 3]));
  await store.close();
  return directory;
}

/**
 * Opens a read-only view of the clean store, damages it with `damage`, and verifies through the view: the
 * view opened before the damage (opening checks the log too), and it never touches the files.
 */
async function verifyAfter(directory: string, damage: () => void): Promise<VerifyProblem[]> {
  const store: EventStore = await fileStore({ directory, readOnly: true });
  damage();
  const before = snapshotOf(directory);
  try {
    return (await store.verify!()).problems;
  } finally {
    await store.close();
    expect(snapshotOf(directory)).toEqual(before);
  }
}

/** Every file's bytes, to show that verify wrote nothing. */
function snapshotOf(directory: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files[join(entry.parentPath, entry.name)] = readFileSync(join(entry.parentPath, entry.name)).toString('base64');
  }
  return files;
}

/** The `line` (1-based, across the log) of the store in `directory`. */
const lineOf = (directory: string, line: number) => logLines(directory)[line - 1] as SegmentLine;

/** Rewrites the segment of `line` with `bytes` in place of the line. */
function replaceLine(line: SegmentLine, bytes: Buffer): void {
  const segment = readFileSync(line.path);
  writeFileSync(line.path, Buffer.concat([segment.subarray(0, line.offset), bytes, segment.subarray(line.offset + line.bytes.length)]));
}

/** Flips a bit of the byte `at` bytes into `line`, in its segment. */
function flipByte(line: SegmentLine, at: number): void {
  const bytes = Buffer.from(line.bytes);
  bytes[at] = (bytes[at] as number) ^ 0x01;
  replaceLine(line, bytes);
}

const where = (p: VerifyProblem) => `${p.severity} ${p.code} ${p.file?.split('/').slice(-2).join('/')}:${p.line ?? ''}`;
const SEGMENT = 'log/00000000000000000001.jsonl';

describe('verify', () => {
  it('a clean store has no problems, on the writer and on a read-only view', async () => {
    const directory = await written();
    expect(await verifyAfter(directory, () => undefined)).toEqual([]);
    const writer = await fileStore({ directory });
    const report = await writer.verify!();
    await writer.close();
    // Every record of the log is checked: c's event, dead since its snapshot, too.
    expect(report).toEqual({ ok: true, problems: [], checked: { streams: 3, records: 8, snapshots: 1, blobs: 1 } });
  });

  it('a flipped byte is an error naming the segment and line', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => flipByte(lineOf(directory, 5), 70));
    expect(found.map(where)).toEqual([`error damaged_record ${SEGMENT}:5`]);
  });

  it('lines swapped within a batch are an error naming the line where the order breaks', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => {
      const [two, three] = [lineOf(directory, 2), lineOf(directory, 3)];
      const segment = readFileSync(two.path);
      writeFileSync(two.path, Buffer.concat([segment.subarray(0, two.offset), three.bytes, two.bytes, segment.subarray(three.offset + three.bytes.length)]));
    });
    // Line 2 holds a's revision 3 right after its revision 1; line 3 (revision 2, more to come) then runs into b's batch.
    expect(found.map(where)).toEqual([`error revision_gap ${SEGMENT}:2`, `error damaged_record ${SEGMENT}:3`]);
  });

  it('a missing blob is an error naming the blob; an orphan blob is a warning naming the blob', async () => {
    const directory = await written();
    const [sha] = readdirSync(join(directory, 'blobs'));
    const found = await verifyAfter(directory, () => {
      renameSync(join(directory, 'blobs', sha as string), join(directory, 'blobs', 'f'.repeat(64)));
    });
    expect(found.map(where)).toEqual([
      `error blob_missing blobs/${sha}:`,
      `error blob_hash blobs/${'f'.repeat(64)}:`,
      `warning blob_orphan blobs/${'f'.repeat(64)}:`,
    ]);
  });

  it('a blob whose bytes changed is an error naming the blob', async () => {
    const directory = await written();
    const [sha] = readdirSync(join(directory, 'blobs'));
    const found = await verifyAfter(directory, () => writeFileSync(join(directory, 'blobs', sha as string), new Uint8Array([9])));
    expect(found.map(where)).toEqual([`error blob_hash blobs/${sha}:`]);
  });

  it('a torn tail is a warning naming the line it would be', async () => {
    const directory = await written();
    const found = await verifyAfter(directory, () => {
      appendFileSync(segmentsOf(directory).at(-1) as string, '0123abc {"half');
    });
    expect(found.map(where)).toEqual([`warning torn_tail ${SEGMENT}:10`]);
  });

  it.each([
    ['a byte of its state flipped', (line: SegmentLine) => flipByte(line, line.bytes.indexOf('"state"') + 9)],
    [
      'its identity naming another stream, checksum matching',
      (line: SegmentLine) => {
        const payload = line.bytes.toString('utf8', 65, line.bytes.length - 1).replace('"identity":{"stream":"c"', '"identity":{"stream":"b"');
        replaceLine(line, Buffer.from(frameLine(payload)));
      },
    ],
  ])('a damaged $snapshot line (%s) is an error naming the segment and line', async (_label, damage) => {
    const directory = await written();
    const snapshot = lineOf(directory, 8);
    expect(snapshot.payload.type).toBe('$snapshot');
    const found = await verifyAfter(directory, () => damage(snapshot));
    expect(found.map(where)).toEqual([`error damaged_snapshot ${SEGMENT}:8`]);
  });

  it('goes on past the first problem in a segment, and past a damaged segment, reporting the later ones too', async () => {
    const directory = await written();
    const one = await verifyAfter(directory, () => {
      flipByte(lineOf(directory, 2), 70);
      flipByte(lineOf(directory, 5), 70);
    });
    expect(one.map(where)).toEqual([`error damaged_record ${SEGMENT}:2`, `error damaged_record ${SEGMENT}:5`]);

    defaultSegmentBytes ??= setSegmentBytesForTests(1);
    const several = await written();
    const segments = segmentsOf(several);
    expect(segments.length).toBeGreaterThanOrEqual(4);
    // b's second line (in b's segment) and c's $snapshot (a later segment of its own, not the last).
    const damaged = logLines(several).filter((line) => (line.payload.stream === 'b' && line.payload.revision === 2) || line.payload.type === '$snapshot');
    expect(new Set(damaged.map((line) => line.path)).size).toBe(2);
    expect(damaged.map((line) => line.path)).not.toContain(segments.at(-1));
    const found = await verifyAfter(several, () => {
      for (const line of damaged) flipByte(line, 70);
    });
    expect(found.map((p) => [p.severity, p.file, p.line])).toEqual(damaged.map((line) => ['error', line.path, line.line]));
  });

  it('one damaged line of a stream appended one event at a time is named once, not again at every later line of the stream', async () => {
    const directory = freshDir();
    const store = await fileStore({ directory });
    for (let n = 0; n < 50; n++) await store.append('one', [{ type: 'N', data: { n } }], { expectedRevision: n === 0 ? 'no_stream' : n });
    await store.close();
    const found = await verifyAfter(directory, () => flipByte(lineOf(directory, 2), 70));
    expect(found[0] === undefined ? '' : where(found[0])).toBe(`error damaged_record ${SEGMENT}:2`);
    // Line 3 no longer follows anything the check kept, and may be named too; the 47 lines after it may not.
    expect(found.filter((p) => (p.line ?? 0) > 3).map(where)).toEqual([]);
  });

  it("stops inside a long segment when its signal fires, and rejects with the signal's reason", async () => {
    const directory = freshDir();
    const store = await fileStore({ directory });
    for (let n = 0; n < 40; n++) {
      await store.append(
        'long',
        Array.from({ length: 5000 }, (_, i) => ({ type: 'E', data: { i, text: 'a line of some length to check' } })),
        { expectedRevision: n === 0 ? 'no_stream' : n * 5000 },
      );
    }
    expect(segmentsOf(directory)).toHaveLength(1);
    await store.close();
    // The signal fires once verify has read the segment's first chunk: from then on only a check inside the
    // segment's scan can stop it.
    const controller = new AbortController();
    const reason = new Error('enough');
    let armed = false;
    let reads = 0;
    const fs: Partial<FileSystem> = {
      read: async (...args) => {
        if (armed && ++reads === 2) controller.abort(reason);
        return nodeFileSystem.read(...args);
      },
    };
    const view = await fileStore({ directory, readOnly: true, fs });
    armed = true;
    await expect((view.verify as NonNullable<typeof view.verify>)({ signal: controller.signal })).rejects.toBe(reason);
    expect(reads, 'verify stopped long before the end of the 40 MB segment').toBeLessThan(10);
    await view.close();
  });
});
