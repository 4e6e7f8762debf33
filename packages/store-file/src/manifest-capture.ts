import type { StreamId } from '@sessionfold/core/kernel';
import type { FileSystem } from './fs-layer.js';
import type { Layout } from './layout.js';
import { stampOf, UNKNOWN_STAMP, type FileStamp, type Manifest, type ManifestStream } from './manifest.js';
import type { StreamEntry } from './stream-entry.js';

/** Files looked at at once while capturing. */
const STAT_CONCURRENCY = 32;

/**
 * What the writer's streams hold now (`position`: the watermark, taken before the call), with each file's stamp. Files are looked at first and the state taken
 * after, so a recorded stamp is never newer than the state beside it. A stream that was compacted, deleted or
 * restored meanwhile (its generation moved, or is odd) is left out: open reads it in full. A journal still
 * growing is recorded without its inode and time, so open reads it on from its last checkpoint. `complete`
 * when every stream with files was recorded with the stamps of the files as they are.
 */
export async function captureManifest(
  fsl: FileSystem,
  layout: Layout,
  entries: Iterable<StreamEntry>,
  formatVersion: number,
  position: number,
): Promise<{ manifest: Manifest; complete: boolean }> {
  const looked: { entry: StreamEntry; generation: number; snapshot: FileStamp | undefined; journal: FileStamp | undefined }[] = [];
  for (const entry of entries) {
    if (!entry.journalExists && !entry.snapshot) continue;
    looked.push({ entry, generation: entry.generation, snapshot: undefined, journal: undefined });
  }
  let next = 0;
  const worker = async () => {
    for (let item = looked[next++]; item; item = looked[next++]) {
      if (item.entry.snapshot) item.snapshot = await stampOf(fsl, layout.snapshot(item.entry.name));
      if (item.entry.journalExists) item.journal = await stampOf(fsl, layout.journal(item.entry.name));
    }
  };
  await Promise.all(Array.from({ length: STAT_CONCURRENCY }, worker));

  const streams = new Map<StreamId, ManifestStream>();
  let complete = true;
  for (const { entry, generation, snapshot, journal } of looked) {
    if (generation % 2 === 1 || entry.generation !== generation) {
      complete = false;
      continue;
    }
    const record: ManifestStream = {};
    if (entry.snapshot) {
      record.snapshot = { mark: { ...entry.snapshot }, stamp: snapshot ?? UNKNOWN_STAMP };
      complete &&= snapshot !== undefined;
    }
    if (entry.journalExists) {
      const info = entry.journal;
      const known = journal !== undefined && journal.size === info.length;
      record.journal = { info: { ...info, checkpoints: [...info.checkpoints] }, stamp: known ? journal : UNKNOWN_STAMP };
      complete &&= known;
    }
    streams.set(entry.name, record);
  }
  return { manifest: { formatVersion, position, streams }, complete };
}
