import type { StreamId } from '@sessionfold/core/kernel';
import type { FileSystem } from './fs-layer.js';
import type { Layout } from './layout.js';
import { ManifestBuilder, type ManifestColumns } from './manifest-table.js';
import { stampOf, stampOfSync, UNKNOWN_STAMP, type FileStamp, type ManifestStream } from './manifest.js';
import type { StreamEntry } from './stream-entry.js';

/** Files looked at at once while capturing, with the asynchronous call. */
const STAT_CONCURRENCY = 32;
/** Streams whose files are looked at between two yields to the event loop, with the synchronous call. */
const STAT_SLICE = 256;

/** A stream whose files a capture looks at, and the stamps it found. */
interface Looked {
  entry: StreamEntry;
  generation: number;
  snapshot: FileStamp | undefined;
  journal: FileStamp | undefined;
  length: number;
}

/**
 * What the writer's streams hold now, as manifest columns, with each file's stamp. Files are looked at first
 * and the state taken after, so a recorded stamp is never newer than the state beside it. A stream still as
 * open took it from the manifest (nothing read or changed it since) is copied from that row without a look at
 * its files: under the writer lock, nothing else changes them. A stream that was compacted, deleted or restored
 * meanwhile (its generation moved, or is odd) is left out: open reads it in full. A journal still growing is
 * recorded without its inode and time, so open reads it on from its last checkpoint. `complete` when every
 * stream with files was recorded with the stamps of the files as they are. With `reuseStamps` (periodic
 * recordings), a stream unchanged since the last capture keeps the stamps that one found instead of a new look
 * (see `StreamEntry.stamped`); the recording at close looks at them all.
 */
export async function captureManifest(
  fsl: FileSystem,
  layout: Layout,
  entries: ReadonlyMap<StreamId, StreamEntry>,
  reuseStamps = true,
): Promise<{ columns: ManifestColumns; complete: boolean }> {
  const looked: Looked[] = [];
  let asRecorded = 0;
  for (const entry of entries.values()) {
    if (entry.recorded) asRecorded++;
    if (entry.recorded || (!entry.journalExists && !entry.snapshot)) continue;
    looked.push({ entry, generation: entry.generation, snapshot: undefined, journal: undefined, length: entry.journal.length });
  }
  // Files unchanged since the last capture looked at them keep the stamps it found (see `StreamEntry.stamped`).
  const reused = (item: Looked): boolean => {
    const stamped = item.entry.stamped;
    if (!reuseStamps || !stamped || stamped.generation !== item.generation || stamped.length !== item.length || stamped.snapshot !== item.entry.snapshot)
      return false;
    item.snapshot = stamped.stamps.snapshot;
    item.journal = stamped.stamps.journal;
    return true;
  };
  const lstatSync = fsl.lstatSync?.bind(fsl);
  if (lstatSync) {
    // An lstat takes the kernel a few microseconds; a thread-pool round trip each costs the event loop several
    // times that. A slice at a time, yielding in between, so appends are never held up for long.
    for (let from = 0; from < looked.length; from += STAT_SLICE) {
      if (from > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      for (const item of looked.slice(from, from + STAT_SLICE)) {
        if (reused(item)) continue;
        if (item.entry.snapshot) item.snapshot = stampOfSync(lstatSync, layout.snapshot(item.entry.name));
        if (item.entry.journalExists) item.journal = stampOfSync(lstatSync, layout.journal(item.entry.name));
      }
    }
  } else {
    let next = 0;
    const worker = async () => {
      for (let item = looked[next++]; item; item = looked[next++]) {
        if (reused(item)) continue;
        if (item.entry.snapshot) item.snapshot = await stampOf(fsl, layout.snapshot(item.entry.name));
        if (item.entry.journalExists) item.journal = await stampOf(fsl, layout.journal(item.entry.name));
      }
    };
    await Promise.all(Array.from({ length: STAT_CONCURRENCY }, worker));
  }

  const builder = new ManifestBuilder();
  // Taken after every look, in one synchronous pass: no stream changes meanwhile.
  for (const entry of entries.values()) {
    const recorded = entry.recorded;
    // One being compacted, deleted or restored (odd generation) is left out, as below.
    if (!recorded || entry.generation % 2 === 1) continue;
    builder.copy(recorded.table, recorded.row);
    asRecorded--;
  }
  // A stream changed while the files were looked at is in neither part: open reads it in full.
  let complete = asRecorded === 0;
  for (const { entry, generation, snapshot, journal } of looked) {
    if (generation % 2 === 1 || entry.generation !== generation || entry.recorded) {
      complete = false;
      continue;
    }
    const record: ManifestStream = {};
    if (entry.snapshot) {
      record.snapshot = { mark: entry.snapshot, stamp: snapshot ?? UNKNOWN_STAMP };
      complete &&= snapshot !== undefined;
    }
    let stamped = true;
    if (entry.journalExists) {
      const info = entry.journal;
      const known = journal !== undefined && journal.size === info.length;
      record.journal = { info, stamp: known ? journal : UNKNOWN_STAMP };
      complete &&= known;
      stamped = known;
    }
    if (entry.snapshot) stamped &&= snapshot !== undefined;
    entry.stamped = stamped ? { generation, length: entry.journal.length, snapshot: entry.snapshot, stamps: { snapshot, journal } } : undefined;
    builder.add(entry.name, record);
  }
  return { columns: builder.columns(), complete };
}
