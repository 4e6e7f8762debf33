import { CorruptionError, type AppendResult } from '@sessionfold/core/kernel';
import { errorCode, type FileSystem } from './fs-layer.js';
import { asEventLine, isLineMissingItsNewline, misplaced, type EventLine } from './journal-codec.js';
import { LineReader, type Line } from './journal-reader.js';

/** A place to start reading a journal from: the first live line and every line whose revision is a multiple of `CHECKPOINT_EVERY`. */
export interface Checkpoint {
  revision: number;
  position: number;
  offset: number;
  line: number;
}

/** Sparse enough to cost little memory, dense enough that a read from the middle skips most of the file. */
export const CHECKPOINT_EVERY = 256;

/** What opening a journal learned; "live" lines are those after the snapshot's revision. */
export interface JournalInfo {
  /** Bytes of complete batches: where the next write goes. */
  length: number;
  /** Revision of the last committed line (0 when there is none). */
  lastRevision: number;
  /** Largest position on any committed line, including lines a snapshot already covers. */
  maxPosition: number;
  /** First live line, or where it will go. */
  liveOffset: number;
  liveLine: number;
  /** Positions of the first and last live lines (0 when there are none). */
  firstPosition: number;
  lastPosition: number;
  /** Number of lines in the file (committed), so the next line's number is `lines + 1`. */
  lines: number;
  checkpoints: Checkpoint[];
  /** Event id → result of the append that carried it, for live lines. */
  eventIds: Map<string, EventIdEntry>;
  /** Bytes cut (or, read-only, ignored) after the last complete batch. */
  tornBytes: number;
  /** Inode of the file scanned: a read-only view refuses to read a journal replaced since (0: unknown). */
  ino: number;
  /** Checksum of the last committed line ('' when there is none): tells a journal from another of the same length. */
  lastHash: string;
}

/** Where an event id was committed: the append's result and the event's own revision (for compaction). */
export interface EventIdEntry {
  result: AppendResult;
  revision: number;
}

/** Refuses to be written to: it stands for event ids not read yet, shared by every journal opened from a manifest. */
class EventIdsNotRead extends Map<string, EventIdEntry> {
  override set(): this {
    throw new Error('the event ids of this journal were not read yet');
  }
}

/**
 * The event ids of a journal whose ids were not read (opened from a manifest): one empty map for them all, so
 * opening does not make one per journal. `writableEventIds` gives the journal its own before an id is added.
 */
export const EVENT_IDS_NOT_READ: Map<string, EventIdEntry> = new EventIdsNotRead();

/** The journal's own map of event ids, made now if it still has `EVENT_IDS_NOT_READ`. */
export function writableEventIds(journal: JournalInfo): Map<string, EventIdEntry> {
  if (journal.eventIds === EVENT_IDS_NOT_READ) journal.eventIds = new Map();
  return journal.eventIds;
}

/** An empty journal's description, for a stream whose journal does not exist yet. */
export function emptyJournal(snapshotRevision: number): JournalInfo {
  return {
    length: 0,
    lastRevision: snapshotRevision,
    maxPosition: 0,
    liveOffset: 0,
    liveLine: 1,
    firstPosition: 0,
    lastPosition: 0,
    lines: 0,
    checkpoints: [],
    eventIds: new Map(),
    tornBytes: 0,
    ino: 0,
    lastHash: '',
  };
}

/**
 * Reads a whole journal once at open, checking every line (checksum, JSON, that it names `stream`, gap-free
 * revisions, rising positions unique across `positions` when given; lines without a stream name come first). A torn tail — bytes without a final newline, or the lines of a batch whose last line never
 * made it — is cut off and fsynced when `repair` is set, and only ignored otherwise. Returns undefined
 * when the file does not exist.
 */
export async function scanJournal(
  fsl: FileSystem,
  path: string,
  stream: string,
  snapshotRevision: number,
  repair: boolean,
  positions?: PositionClaims,
  signal?: AbortSignal,
): Promise<JournalInfo | undefined> {
  return scanFile(fsl, path, repair, (reader) => scanLines(reader(0, 1), path, stream, snapshotRevision, positions, undefined, signal));
}

/**
 * Reads on from what `recorded` (a manifest's description of the journal) says it held: the lines from its
 * last checkpoint to the end are read and checked as `scanJournal` checks them, and must still hold that
 * checkpoint's line and, ending at `recorded.length`, its last line (same checksum). A torn tail is cut (`repair`) or
 * ignored. Undefined when the journal does not continue `recorded` (replaced, compacted, or damaged where
 * it was read) or cannot say (no live line): then only a full scan can tell. 'stale' when a
 * line past `recorded` holds a position at or below `recordedAt`: no manifest of that time can explain it. Event ids are not gathered.
 */
export async function resumeJournal(
  fsl: FileSystem,
  path: string,
  stream: string,
  snapshotRevision: number,
  repair: boolean,
  positions: PositionClaims,
  recorded: JournalInfo,
  recordedAt: number,
): Promise<JournalInfo | undefined | 'stale'> {
  const from = recorded.checkpoints[recorded.checkpoints.length - 1];
  if (!from) return undefined;
  // Claimed once the journal is known to continue `recorded`: a full scan after a mismatch claims them again.
  const claims: [number, number][] = [];
  const resume: Resume = { recorded, from, lastLineFound: false };
  let info: JournalInfo | undefined;
  try {
    info = await scanFile(fsl, path, false, (reader) =>
      scanLines(
        reader(from.offset, from.line),
        path,
        stream,
        snapshotRevision,
        { claim: (position, _path, line) => claims.push([position, line ?? 0]) },
        resume,
      ),
    );
  } catch (error) {
    if (error instanceof CorruptionError) return undefined;
    throw error;
  }
  const again = info?.checkpoints[recorded.checkpoints.length - 1];
  if (!info || !again || again.offset !== from.offset || again.revision !== from.revision || again.position !== from.position) return undefined;
  if (!resume.lastLineFound) return undefined;
  for (const [position, line] of claims) {
    if (line > recorded.lines && position <= recordedAt) return 'stale';
    positions.claim(position, path, line);
  }
  if (repair && info.tornBytes > 0) await cutTail(fsl, path, info.length);
  return info;
}

/** What records the positions a scan finds (a `PositionSet`). */
export interface PositionClaims {
  claim(position: number, path: string, line: number | undefined): void;
}

/** Where a resumed scan starts: the recorded description and its last checkpoint. */
interface Resume {
  recorded: JournalInfo;
  from: Checkpoint;
  /** Set when the batch ending at `recorded.length` ends with the recorded last line (revision, position, checksum). */
  lastLineFound: boolean;
}

async function scanFile(
  fsl: FileSystem,
  path: string,
  repair: boolean,
  scan: (reader: (offset: number, line: number) => LineReader) => Promise<JournalInfo>,
): Promise<JournalInfo | undefined> {
  let fd: number;
  try {
    fd = await fsl.open(path, 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  let info: JournalInfo;
  let size: number;
  try {
    const stats = await fsl.fstat(fd);
    size = stats.size;
    info = await scan((offset, line) => new LineReader(fsl, fd, path, offset, size, line));
    info.ino = stats.ino;
  } finally {
    await fsl.close(fd);
  }
  info.tornBytes = size - info.length;
  if (info.tornBytes > 0 && repair) await cutTail(fsl, path, info.length);
  return info;
}

/** Cuts a torn tail off at `length` and fsyncs the file. */
async function cutTail(fsl: FileSystem, path: string, length: number): Promise<void> {
  const wfd = await fsl.open(path, 'r+');
  try {
    await fsl.ftruncate(wfd, length);
    await fsl.fsync(wfd);
  } finally {
    await fsl.close(wfd);
  }
}

async function scanLines(
  reader: LineReader,
  path: string,
  stream: string,
  snapshotRevision: number,
  positions: PositionClaims | undefined,
  resume: Resume | undefined,
  signal?: AbortSignal,
): Promise<JournalInfo> {
  const info = emptyJournal(snapshotRevision);
  info.lastRevision = 0;
  let prevRevision = 0;
  let prevPosition = 0;
  let seenLive = false;
  if (resume) {
    const { recorded, from } = resume;
    Object.assign(info, recorded, { checkpoints: recorded.checkpoints.slice(0, -1), eventIds: EVENT_IDS_NOT_READ, tornBytes: 0 });
    // The checkpoint is found again by the same rule that recorded it: the first live line, or a multiple of CHECKPOINT_EVERY.
    seenLive = info.checkpoints.length > 0;
    prevRevision = from.revision - 1;
    prevPosition = from.position - 1;
  }
  /** Set once a line names its stream: every later line must too. */
  let named = false;
  /** Lines of the batch being read; they count only once the batch's last line is found. */
  let batch: { line: Line; event: EventLine }[] = [];
  let lastLineNo = 0;

  const commit = () => {
    const last = batch[batch.length - 1] as { line: Line; event: EventLine };
    const result: AppendResult = { revision: last.event.revision, position: last.event.position };
    for (const { line, event } of batch) {
      positions?.claim(event.position, path, line.no);
      info.maxPosition = event.position;
      if (event.revision <= snapshotRevision) continue;
      if (!seenLive) {
        seenLive = true;
        info.liveOffset = line.offset;
        info.liveLine = line.no;
        info.firstPosition = event.position;
      }
      if (info.checkpoints.length === 0 || event.revision % CHECKPOINT_EVERY === 0) {
        info.checkpoints.push({ revision: event.revision, position: event.position, offset: line.offset, line: line.no });
      }
      info.lastPosition = event.position;
      // A resumed journal's ids are read whole on its stream's first append (`readEventIds`), not in part here.
      if (event.eventId !== undefined && !resume) info.eventIds.set(event.eventId, { result, revision: event.revision });
    }
    info.lastRevision = last.event.revision;
    info.length = last.line.next;
    info.lines = last.line.no;
    info.lastHash = last.line.hash;
    if (resume && last.line.next === resume.recorded.length) {
      const { recorded } = resume;
      resume.lastLineFound =
        last.event.revision === recorded.lastRevision && last.event.position === recorded.maxPosition && last.line.hash === recorded.lastHash;
    }
    batch = [];
  };

  for (let lines = await reader.next(); lines; lines = await reader.next()) {
    // Between chunks: each read waited for the disk, so a signal a timer fires is seen here.
    signal?.throwIfAborted();
    for (const line of lines) {
      lastLineNo = line.no;
      const event = asEventLine(line.value);
      if (typeof event === 'string') throw new CorruptionError(path, line.no, event);
      if (event.stream !== undefined) {
        if (event.stream !== stream) throw new CorruptionError(path, line.no, misplaced(event.stream));
        named = true;
      } else if (named) {
        throw new CorruptionError(path, line.no, 'the line does not name its stream, though the lines before it do');
      }
      if (prevRevision === 0) {
        const first = snapshotRevision === 0 ? 1 : undefined;
        if (first !== undefined ? event.revision !== first : event.revision > snapshotRevision + 1) {
          throw new CorruptionError(
            path,
            line.no,
            snapshotRevision === 0
              ? `first revision is ${event.revision}, not 1, and there is no snapshot`
              : `first revision is ${event.revision}, past the snapshot's revision ${snapshotRevision} + 1`,
          );
        }
      } else if (event.revision !== prevRevision + 1) {
        throw new CorruptionError(path, line.no, `revision ${event.revision} follows revision ${prevRevision}`);
      }
      if (event.position <= prevPosition) {
        throw new CorruptionError(path, line.no, `position ${event.position} does not follow position ${prevPosition}`);
      }
      prevRevision = event.revision;
      prevPosition = event.position;
      batch.push({ line, event });
      if (event.more !== true) commit();
    }
  }
  if (isLineMissingItsNewline(reader.tail)) {
    throw new CorruptionError(path, lastLineNo + 1, 'a complete record lost its newline');
  }
  if (!seenLive) {
    info.liveOffset = info.length;
    info.liveLine = info.lines + 1;
  }
  return info;
}

/**
 * The event ids of a journal's live lines, with the result of the append that carried each, for a stream
 * opened from a manifest (which does not hold them): read on the stream's first append, checking each line.
 */
export async function readEventIds(fsl: FileSystem, path: string, journal: JournalInfo): Promise<Map<string, EventIdEntry>> {
  const ids = new Map<string, EventIdEntry>();
  if (journal.liveOffset >= journal.length) return ids;
  const fd = await fsl.open(path, 'r');
  try {
    const reader = new LineReader(fsl, fd, path, journal.liveOffset, journal.length, journal.liveLine);
    let batch: { eventId: string; revision: number }[] = [];
    for (let lines = await reader.next(); lines; lines = await reader.next()) {
      for (const line of lines) {
        const event = asEventLine(line.value);
        if (typeof event === 'string') throw new CorruptionError(path, line.no, event);
        if (event.eventId !== undefined) batch.push({ eventId: event.eventId, revision: event.revision });
        if (event.more === true) continue;
        const result: AppendResult = { revision: event.revision, position: event.position };
        for (const { eventId, revision } of batch) ids.set(eventId, { result, revision });
        batch = [];
      }
    }
  } finally {
    await fsl.close(fd);
  }
  return ids;
}
