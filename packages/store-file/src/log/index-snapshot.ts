import { join } from 'node:path';
import { writeFileAtomic } from '@sessionfold/atomic-write';
import { CorruptionError } from '@sessionfold/core/kernel';
import { atomicWriteFs, errorCode, listDir, unlinkIfPresent, type FileSystem } from '../fs-layer.js';
import { decodeLine, frameLine } from '../journal-codec.js';
import { paddedName, type Segment, segmentFileName } from './segments.js';
import { StreamEntry, StreamIndex, type MarkRecord } from './stream-index.js';

const INDEX_NAME = /^(\d{20})\.json$/;
const FORMAT = 'sessionfold.log-index';
const FORMAT_VERSION = 2;

type Mark = [revision: number, position: number, segment: number, offset: number, bytes: number];
type Ids = [id: string, revision: number, resultRevision: number, resultPosition: number][];
type EntryRow = [
  name: string,
  revision: number,
  snapshot: Mark | 0,
  deleted: Mark | 0,
  runs: number[],
  firstRunRevision: number,
  ids: Ids | 0,
  blobs: string[] | 0,
];
interface SnapshotBody {
  format: typeof FORMAT;
  formatVersion: number;
  lastPosition: number;
  segments: [base: number, size: number, lines: number, marks: number[]][];
  dead: [segment: number, bytes: number][];
  /** The segment base numbers runs point into, by ordinal. */
  bases: number[];
  streams: EntryRow[];
}

const markOf = (mark: MarkRecord | undefined): Mark | 0 =>
  mark === undefined ? 0 : [mark.revision, mark.position, mark.at.segment, mark.at.offset, mark.at.bytes];
const fromMark = (mark: Mark | 0): MarkRecord | undefined =>
  mark === 0 ? undefined : { revision: mark[0], position: mark[1], at: { segment: mark[2], offset: mark[3], bytes: mark[4] } };

/**
 * Saves the index as it is now in `<indexDir>/<last position>.json` (one framed line, written atomically) and
 * removes the older ones: an open then reads only the log after it. Only a cache: losing it costs a longer open.
 */
export async function saveIndexSnapshot(fs: FileSystem, indexDir: string, segments: readonly Segment[], index: StreamIndex): Promise<void> {
  // Taken in one synchronous pass: the index and the segments' sizes agree.
  const body: SnapshotBody = {
    format: FORMAT,
    formatVersion: FORMAT_VERSION,
    lastPosition: index.lastPosition,
    segments: segments.map((segment) => [segment.base, segment.size, segment.lines, segment.marks.slice()]),
    dead: [...index.dead],
    bases: index.bases.slice(),
    streams: [...index.streams.values()].map(
      (entry): EntryRow => [
        entry.name,
        entry.revision,
        markOf(entry.snapshot),
        markOf(entry.deleted),
        entry.runs.slice(),
        entry.firstRunRevision,
        entry.eventIds === undefined ? 0 : [...entry.eventIds].map(([id, held]) => [id, held.revision, held.result.revision, held.result.position]),
        entry.blobs === undefined ? 0 : [...entry.blobs],
      ],
    ),
  };
  const line = frameLine(JSON.stringify(body));
  const name = `${paddedName(index.lastPosition)}.json`;
  await fs.mkdir(indexDir, 0o700);
  await writeFileAtomic(join(indexDir, name), line, { mode: 0o600, fs: atomicWriteFs(fs) });
  for (const other of await listDir(fs, indexDir)) if (other !== name) await unlinkIfPresent(fs, join(indexDir, other));
}

/** Removes every index snapshot (before cleaning rewrites a segment they point into). */
export async function removeIndexSnapshots(fs: FileSystem, indexDir: string): Promise<void> {
  for (const name of await listDir(fs, indexDir)) await unlinkIfPresent(fs, join(indexDir, name));
}

/**
 * The newest index snapshot of `indexDir`, with the segments as it knew them (later segments follow from the
 * directory); undefined when there is none (or it cannot be read: it is only a cache), and the log is read from
 * its start. A segment it lists that is missing or shorter than it recorded is a `CorruptionError`.
 */
export async function loadIndexSnapshot(
  fs: FileSystem,
  indexDir: string,
  logDir: string,
  found: readonly Segment[],
): Promise<{ segments: Segment[]; index: StreamIndex } | undefined> {
  const names = (await listDir(fs, indexDir).catch(() => [])).filter((name) => INDEX_NAME.test(name)).sort();
  const newest = names.at(-1);
  if (newest === undefined) return undefined;
  let body: SnapshotBody;
  try {
    const bytes = await fs.readFile(join(indexDir, newest));
    const decoded = decodeLine(bytes, 0, bytes.length - 1);
    if ('reason' in decoded) return undefined;
    body = decoded.value as SnapshotBody;
    if (
      body?.format !== FORMAT ||
      body.formatVersion !== FORMAT_VERSION ||
      !Array.isArray(body.segments) ||
      !Array.isArray(body.streams) ||
      !Array.isArray(body.bases)
    )
      return undefined;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    return undefined;
  }
  const byBase = new Map(found.map((segment) => [segment.base, segment]));
  const segments: Segment[] = [];
  const snapshotPath = join(indexDir, newest);
  for (const [base, size, lines, marks] of body.segments) {
    const path = join(logDir, segmentFileName(base));
    // Segments are never removed and shrink only by cleaning, which removes the index snapshots first: a segment
    // missing or shorter than recorded lost lines that were durable when the snapshot was saved.
    const segment = byBase.get(base);
    if (segment === undefined) throw new CorruptionError(path, undefined, `the segment is missing, though ${snapshotPath} lists it: its lines are lost`);
    // Through the segment's own descriptor: a link or a FIFO in its place is refused naming it, never read.
    const stats = await fs.fstat(await segment.descriptor(fs));
    if (stats.size < size) {
      throw new CorruptionError(path, lines, `the segment ends at byte ${stats.size}, though ${snapshotPath} records ${size} bytes of it: lines were cut away`);
    }
    segment.size = size;
    segment.lines = lines;
    segment.marks.push(...marks);
    segments.push(segment);
  }
  const last = segments.at(-1)?.base ?? 0;
  for (const segment of found) if (segment.base > last) segments.push(segment);
  const index = new StreamIndex();
  index.lastPosition = body.lastPosition;
  for (const [segment, bytes] of body.dead) index.dead.set(segment, bytes);
  for (const base of body.bases) index.ordinal(base);
  for (const [name, revision, snapshot, deleted, runs, firstRunRevision, ids, blobs] of body.streams) {
    const entry = new StreamEntry(name);
    entry.revision = revision;
    entry.snapshot = fromMark(snapshot);
    entry.deleted = fromMark(deleted);
    // Copied number by number: an array `JSON.parse` made holds each large number boxed, one built by pushing
    // them holds them unboxed (a third of the heap for a stream of many small runs).
    const unboxed: number[] = [];
    for (const value of runs) unboxed.push(value);
    entry.runs = unboxed.slice();
    entry.firstRunRevision = firstRunRevision;
    if (ids !== 0)
      entry.eventIds = new Map(
        ids.map(([id, rev, resultRevision, resultPosition]) => [id, { revision: rev, result: { revision: resultRevision, position: resultPosition } }]),
      );
    index.streams.set(name, entry);
    if (blobs !== 0) for (const sha of blobs) index.applyBlob({ kind: 'blob', stream: name, sha256: sha, gone: false });
  }
  return { segments, index };
}
