import { CorruptionError, type AppendResult } from '@sessionfold/core/kernel';
import { errorCode, type FileSystem } from './fs-layer.js';
import { asEventLine, isLineMissingItsNewline, misplaced, type EventLine } from './journal-codec.js';
import { LineReader, type Line } from './journal-reader.js';
import type { PositionSet } from './position-set.js';

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
}

/** Where an event id was committed: the append's result and the event's own revision (for compaction). */
export interface EventIdEntry {
  result: AppendResult;
  revision: number;
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
  positions?: PositionSet,
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
    info = await scanLines(new LineReader(fsl, fd, path, 0, size, 1), path, stream, snapshotRevision, positions);
    info.ino = stats.ino;
  } finally {
    await fsl.close(fd);
  }
  info.tornBytes = size - info.length;
  if (info.tornBytes > 0 && repair) {
    const wfd = await fsl.open(path, 'r+');
    try {
      await fsl.ftruncate(wfd, info.length);
      await fsl.fsync(wfd);
    } finally {
      await fsl.close(wfd);
    }
  }
  return info;
}

async function scanLines(reader: LineReader, path: string, stream: string, snapshotRevision: number, positions: PositionSet | undefined): Promise<JournalInfo> {
  const info = emptyJournal(snapshotRevision);
  info.lastRevision = 0;
  let prevRevision = 0;
  let prevPosition = 0;
  let seenLive = false;
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
      if (event.eventId !== undefined) info.eventIds.set(event.eventId, { result, revision: event.revision });
    }
    info.lastRevision = last.event.revision;
    info.length = last.line.next;
    info.lines = last.line.no;
    batch = [];
  };

  for (let lines = await reader.next(); lines; lines = await reader.next()) {
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
