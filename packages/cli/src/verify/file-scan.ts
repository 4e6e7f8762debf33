import { join, relative } from 'node:path';
import type { Progress } from '../progress.js';
import { scanLog } from './log-scan.js';
import type { Findings } from './problems.js';
import { PositionBits } from './position-bits.js';
import { blobNamesOf, checkBlobBytes, forEachFramedLine, framedLines, listFiles, type Namer, present } from './store-files.js';

/**
 * Checks every file of a file store as it lies on disk, without the store's code: the framing and checksum
 * of every line, revision and position order (per journal up to format 3, along the one log from format 4),
 * snapshot identities, blob owners against blob files, and each blob's bytes against its name. Every problem
 * is named by file and 1-based line; an unfinished last line (which the next writer cuts) is a warning.
 */
export async function scanFileStore(directory: string, findings: Findings, bar: Progress): Promise<void> {
  const name: Namer = (path) => relative(directory, path) || path;
  const formatPath = join(directory, 'format.json');
  const format = present(formatPath) ? formatVersion(await framedLines(formatPath, name(formatPath), findings)) : undefined;
  // Format 1 has no format file; without one (or with one that cannot be read) a log marks format 4.
  if ((format ?? (present(join(directory, 'log')) ? 4 : 1)) >= 4) return scanLog(directory, name, findings, bar);
  return scanJournals(directory, name, findings, bar);
}

/** The `formatVersion` format.json's line names; undefined when it names none. */
function formatVersion(lines: readonly { payload: unknown }[]): number | undefined {
  const version = (lines[0]?.payload as { formatVersion?: unknown } | undefined)?.formatVersion;
  return typeof version === 'number' ? version : undefined;
}

/** The scan of formats 1–3: one journal per stream, a snapshot file beside it, an owners file per stream. */
async function scanJournals(directory: string, name: Namer, findings: Findings, bar: Progress): Promise<void> {
  const streamsDir = join(directory, 'streams');
  const ownersDir = join(directory, 'owners');
  const blobsDir = join(directory, 'blobs');
  const streamFiles = await listFiles(streamsDir, name, findings);
  const ownerFiles = await listFiles(ownersDir, name, findings);
  const blobFiles = await listFiles(blobsDir, name, findings);
  bar.total(streamFiles.length + ownerFiles.length + blobFiles.length + 2);

  const tombstones = join(directory, 'tombstones.jsonl');
  if (present(tombstones)) await framedLines(tombstones, name(tombstones), findings);
  bar.tick(2);

  const positions = new PositionBits();
  const snapshotRevisions = new Map<string, number>();
  for (const file of streamFiles.filter((entry) => entry.endsWith('.snapshot.json'))) {
    const path = join(streamsDir, file);
    const stream = file.slice(0, -'.snapshot.json'.length);
    const lines = await framedLines(path, name(path), findings);
    const envelope = lines[0]?.payload as { identity?: { stream?: unknown }; revision?: unknown } | undefined;
    if (envelope !== undefined) {
      if (envelope.identity?.stream !== stream)
        findings.error(name(path), 1, `the snapshot's identity names stream ${JSON.stringify(envelope.identity?.stream)}, not ${stream}`);
      if (typeof envelope.revision === 'number') snapshotRevisions.set(stream, envelope.revision);
    }
    bar.tick();
  }
  for (const file of streamFiles.filter((entry) => entry.endsWith('.jsonl'))) {
    const path = join(streamsDir, file);
    const stream = file.slice(0, -'.jsonl'.length);
    findings.streams++;
    await checkJournal(path, name(path), stream, snapshotRevisions.get(stream) ?? 0, positions, findings);
    bar.tick();
  }

  const blobNames = blobNamesOf(blobFiles);
  for (const file of ownerFiles.filter((entry) => entry.endsWith('.jsonl'))) {
    const path = join(ownersDir, file);
    for (const { line, payload } of await framedLines(path, name(path), findings)) {
      const sha = (payload as { sha256?: unknown }).sha256;
      if (typeof sha !== 'string') findings.error(name(path), line, 'an owner record without a sha256');
      else if (!blobNames.has(sha)) findings.error(name(path), line, `the stream owns blob ${sha}, but ${name(join(blobsDir, sha))} is missing`);
    }
    bar.tick();
  }
  await checkBlobBytes(blobsDir, blobNames, name, findings, bar);
}

/**
 * Checks a journal's records: revisions gap-free after the snapshot's, positions increasing and used nowhere
 * else in the store, batches finished.
 */
async function checkJournal(path: string, file: string, stream: string, snapshotRevision: number, positions: PositionBits, findings: Findings): Promise<void> {
  let revision: number | undefined;
  let position = 0;
  let openBatch: number | undefined;
  let failed = false;
  const whole = await forEachFramedLine(path, file, findings, ({ line, payload }) => {
    const event = payload as { stream?: unknown; revision?: unknown; position?: unknown; more?: unknown };
    if (typeof event.revision !== 'number' || typeof event.position !== 'number') {
      findings.error(file, line, 'an event without a revision or position');
      failed = true;
      return false;
    }
    // Checked before its position is claimed: a line copied from another journal is the copy's error, and leaves
    // the original's position to it. (Lines of early releases carry no stream name.)
    if (event.stream !== undefined && event.stream !== stream) {
      findings.error(file, line, `the line names stream ${JSON.stringify(event.stream)}: it belongs to another journal`);
      failed = true;
      return false;
    }
    if (!positions.claim(event.position)) {
      findings.error(file, line, `position ${event.position} is also used elsewhere in the store: a line or journal was copied or moved`);
      failed = true;
      return false;
    }
    // Events a snapshot covers may remain after a crash between writing the snapshot and rewriting the journal.
    if (event.revision <= snapshotRevision && revision === undefined) {
      position = Math.max(position, event.position);
      return true;
    }
    const expected = (revision ?? snapshotRevision) + 1;
    if (event.revision !== expected) {
      findings.error(file, line, `revision ${event.revision} where revision ${expected} was expected (a line moved, removed or duplicated)`);
      failed = true;
      return false;
    }
    if (event.position <= position) {
      findings.error(file, line, `position ${event.position} does not follow position ${position} (a line moved or duplicated)`);
      failed = true;
      return false;
    }
    revision = event.revision;
    position = event.position;
    openBatch = event.more === true ? (openBatch ?? line) : undefined;
    return true;
  });
  // A batch left open by a line the scan stopped at is that line's damage, not a torn tail.
  if (whole && !failed && openBatch !== undefined)
    findings.warning(file, openBatch, 'a batch whose last record never made it (a torn tail; a writer drops it on open)');
}
