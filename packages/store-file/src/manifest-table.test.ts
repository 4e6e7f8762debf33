import { describe, expect, it } from 'vitest';
import type { StreamId } from '@sessionfold/core/kernel';
import { emptyJournal } from './journal-scan.js';
import { ManifestBuilder, ManifestTable, UNKNOWN_STAMP, type ManifestStream } from './manifest-table.js';

/** Rows of every shape: journal and snapshot, journal alone (with and without a checksum or a known stamp), snapshot alone. */
function records(): [StreamId, ManifestStream][] {
  const journal = (lastHash: string, checkpoints: number) => ({
    ...emptyJournal(0),
    length: 900,
    lastRevision: 7,
    maxPosition: 41,
    liveOffset: 120,
    liveLine: 2,
    firstPosition: 3,
    lastPosition: 41,
    lines: 7,
    lastHash,
    checkpoints: Array.from({ length: checkpoints }, (_, i) => ({ revision: i + 1, position: 10 + i, offset: 100 * i, line: i + 1 })),
  });
  const mark = { revision: 5, position: 30, recordedAt: '2026-12-01T00:00:00.000Z' };
  return [
    [
      'both' as StreamId,
      {
        snapshot: { mark, stamp: { size: 64, ino: 12, mtimeMs: 1764547200123.25 } },
        journal: { info: journal('ab'.repeat(32), 2), stamp: { size: 900, ino: 13, mtimeMs: 1764547200456.5 } },
      },
    ],
    ['journal' as StreamId, { journal: { info: journal('', 1), stamp: UNKNOWN_STAMP } }],
    ['snapshot' as StreamId, { snapshot: { mark, stamp: { size: 64, ino: -1, mtimeMs: -1 } } }],
  ];
}

describe('a manifest table', () => {
  it('copies a row into the next manifest exactly as the row described anew would be written', () => {
    const written = new ManifestBuilder();
    for (const [stream, record] of records()) written.add(stream, record);
    const table = ManifestTable.from(written.columns() as unknown as Record<string, unknown>) as ManifestTable;
    const copied = new ManifestBuilder();
    const described = new ManifestBuilder();
    // In another order, so each copied row lands at another index.
    for (const row of [2, 0, 1]) {
      copied.copy(table, row);
      described.add(table.name(row), table.record(row));
    }
    expect(copied.columns()).toEqual(described.columns());
    expect(copied.columns().snapshots.map((snapshot) => snapshot[0])).toEqual([0, 1]);
  });
});
