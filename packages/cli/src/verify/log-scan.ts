import { join } from 'node:path';
import type { Progress } from '../progress.js';
import type { Findings } from './problems.js';
import { blobNamesOf, checkBlobBytes, forEachFramedLine, listFiles, type Namer } from './store-files.js';

/** A segment's name: the log's next position when it was started, zero-padded to 20 digits. */
const SEGMENT = /^\d{20}\.jsonl$/;
const SNAPSHOT = '$snapshot';
const DELETED = '$deleted';

/** What the scan knows of one stream so far. */
interface StreamState {
  /** The current incarnation's revision (0: none yet); undefined after damage, when any revision is taken as it comes. */
  revision: number | undefined;
  /** Counts the stream's deletions: an owner line belongs to the incarnation it was written in. */
  incarnation: number;
  deleted: boolean;
  /** Position of the stream's last deletion and last snapshot, and that snapshot's revision: what covers a gap. */
  deletedAt: number;
  snapshotAt: number;
  snapshotRevision: number;
}

/**
 * Events after missing revisions of their stream. Cleaning leaves such gaps where it removed dead lines, covered
 * by a later snapshot or deletion of the stream; any other gap is lines lost.
 */
interface Gap {
  stream: string;
  after: number;
  revision: number;
  position: number;
  file: string;
  line: number;
}

/** A blob owner line, kept until the end to be checked against the blob files and the owner's fate. */
interface Owner {
  stream: string;
  incarnation: number;
  sha: string;
  file: string;
  line: number;
}

/** The members of a log line the scan reads. */
interface LogLine {
  stream?: unknown;
  revision?: unknown;
  position?: unknown;
  type?: unknown;
  more?: unknown;
  blob?: unknown;
  gone?: unknown;
  data?: { revision?: unknown; identity?: { stream?: unknown } } | null;
}

/**
 * Checks a store of format 4: every line of the `log/` segments in name order (framing, checksum), positions
 * strictly increasing along the whole log, each stream's revisions +1 within an incarnation, `more` batches
 * contiguous and ended, snapshot identities, blob owners against blob files and blob bytes. Only the last
 * segment's unfinished tail is a warning; damage anywhere else is an error.
 */
export async function scanLog(directory: string, name: Namer, findings: Findings, bar: Progress): Promise<void> {
  const logDir = join(directory, 'log');
  const blobsDir = join(directory, 'blobs');
  const segments = (await listFiles(logDir, name, findings)).filter((file) => SEGMENT.test(file));
  const blobNames = blobNamesOf(await listFiles(blobsDir, name, findings));
  bar.total(segments.length + blobNames.size);

  const streams = new Map<string, StreamState>();
  let owners: Owner[] = [];
  const gaps: Gap[] = [];
  let position = 0;
  let batch: { stream: string; file: string; line: number } | undefined;
  // After damage, what follows cannot be compared with what came before: the next position and each stream's
  // next revision (of a stream seen before or not) are taken as they come, so one damaged line is one error.
  let lost = false;
  let whole = true;
  for (const [index, segment] of segments.entries()) {
    const file = name(join(logDir, segment));
    const start = Number(segment.slice(0, 20));
    let first = true;
    const fail = (line: number, message: string) => (findings.error(file, line, message), false);
    const sealed = index < segments.length - 1;
    whole = await forEachFramedLine(
      join(logDir, segment),
      file,
      findings,
      ({ line, payload }) => {
        const record = payload as LogLine;
        if (typeof record.stream !== 'string') return fail(line, 'a record without a stream');
        const state = streams.get(record.stream) ?? {
          revision: lost ? undefined : 0,
          incarnation: 0,
          deleted: false,
          deletedAt: 0,
          snapshotAt: 0,
          snapshotRevision: 0,
        };
        if (!streams.has(record.stream)) streams.set(record.stream, state);
        if (record.position === undefined && typeof record.blob === 'string') {
          const sha = record.blob;
          // A line taking ownership back (a put a failure or a crash cut short) answers the owner lines before it.
          if (record.gone === true)
            owners = owners.filter((owner) => owner.stream !== record.stream || owner.sha !== sha || owner.incarnation !== state.incarnation);
          else owners.push({ stream: record.stream, incarnation: state.incarnation, sha, file, line });
          return true;
        }
        if (typeof record.revision !== 'number' || typeof record.position !== 'number') return fail(line, 'a record without a revision or position');
        if (first && record.position < start) return fail(line, `position ${record.position} is before the segment's name (${start}): the line was moved`);
        first = false;
        if (record.position <= position) return fail(line, `position ${record.position} does not follow position ${position} (a line moved or duplicated)`);
        position = record.position;
        if (batch !== undefined && (batch.stream !== record.stream || record.type === SNAPSHOT || record.type === DELETED))
          return fail(line, `a record of stream ${record.stream} inside the unfinished batch of ${batch.stream} begun at ${batch.file}:${batch.line}`);
        const current = state.revision;
        if (record.type === SNAPSHOT) {
          const snapshot = record.data;
          if (snapshot?.identity?.stream !== record.stream)
            return fail(line, `the snapshot's identity names stream ${JSON.stringify(snapshot?.identity?.stream)}, not ${record.stream}`);
          if (snapshot.revision !== record.revision)
            return fail(line, `the snapshot holds revision ${JSON.stringify(snapshot.revision)}, its line ${record.revision}`);
          // A stream with no events restored from a snapshot starts there; a compaction covers events it has, and
          // one past the revision seen covers the events cleaning removed before it.
          if (current !== undefined && record.revision > current) state.revision = record.revision;
          state.snapshotAt = record.position;
          state.snapshotRevision = record.revision;
          state.deleted = false;
        } else if (record.type === DELETED) {
          if (current !== undefined && record.revision < current)
            return fail(line, `the stream deleted at revision ${record.revision}, but its revision is ${current}`);
          state.revision = 0;
          state.deletedAt = record.position;
          state.incarnation++;
          state.deleted = true;
        } else {
          // A stream's first line in the log may start at any revision: the earlier ones were dead and cleaned, or
          // left out by the upgrade from an earlier layout. Inside a batch revisions go one by one; a gap between
          // batches is checked at the end against a later snapshot or deletion that covers it.
          const expected = current === undefined || current === 0 ? record.revision : current + 1;
          if (record.revision < expected || (record.revision !== expected && batch !== undefined))
            return fail(line, `revision ${record.revision} where revision ${expected} was expected (a line moved, removed or duplicated)`);
          if (record.revision > expected && current !== undefined)
            gaps.push({ stream: record.stream, after: current, revision: record.revision, position: record.position, file, line });
          state.revision = record.revision;
          state.deleted = false;
        }
        batch = record.more === true ? (batch ?? { stream: record.stream, file, line }) : undefined;
        return true;
      },
      sealed,
    );
    if (!whole) {
      lost = true;
      batch = undefined;
      position = 0;
      for (const state of streams.values()) state.revision = undefined;
    }
    bar.tick();
  }
  // A batch still open at the end of an intact log is a torn tail, which a writer drops on open.
  if (batch !== undefined && whole)
    findings.warning(batch.file, batch.line, 'a batch whose last record never made it (a torn tail; a writer drops it on open)');
  findings.streams += streams.size;

  for (const gap of gaps) {
    const state = streams.get(gap.stream) as StreamState;
    const covered = state.deletedAt > gap.position || (state.snapshotAt > gap.position && state.snapshotRevision >= gap.revision - 1);
    if (!covered)
      findings.error(gap.file, gap.line, `revision ${gap.revision} where revision ${gap.after + 1} was expected (a line moved, removed or duplicated)`);
  }
  const owned = new Set<string>();
  for (const owner of owners) {
    const state = streams.get(owner.stream) as StreamState;
    // A deleted incarnation's blobs go with it: only a live owner needs its file.
    if (state.deleted || state.incarnation !== owner.incarnation) continue;
    owned.add(owner.sha);
    if (!blobNames.has(owner.sha))
      findings.error(owner.file, owner.line, `stream ${owner.stream} owns blob ${owner.sha}, but ${name(join(blobsDir, owner.sha))} is missing`);
  }
  for (const sha of blobNames) {
    if (!owned.has(sha)) findings.warning(name(join(blobsDir, sha)), undefined, 'a blob no live stream owns (kept; remove it by hand if nothing needs it)');
  }
  await checkBlobBytes(blobsDir, blobNames, name, findings, bar);
}
