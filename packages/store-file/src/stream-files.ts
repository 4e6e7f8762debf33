import type { StartPoint } from './journal-events.js';
import type { StreamId } from '@sessionfold/core/kernel';
import { errorCode, readAll, unreadable, type FileSystem } from './fs-layer.js';
import type { JournalInfo } from './journal-scan.js';
import { decodeSnapshot, type StoredSnapshot } from './snapshot-file.js';

/** Position and time of a `$snapshot` or `$deleted` change. */
export interface ChangeMark {
  revision: number;
  position: number;
  recordedAt: string;
}

/** A descriptor on a version's journal, and how to give it back. */
export interface JournalHandle {
  fd: number;
  done(): void;
  /** Set when the bytes asked for were read already (see `StreamEntry.readRecent`): they are taken from here, not from `fd`. */
  recent?: RecentBytes;
}

/** A journal's bytes from `offset` on, read in one go for a reader. */
export interface RecentBytes {
  offset: number;
  bytes: Buffer;
}

/**
 * The most of a journal's latest bytes a reader reads with one synchronous call on the writer's descriptor
 * instead of opening the file: bytes this writer wrote a moment ago are in the page cache, so the read does not
 * wait on the disk, and it still checks the file's bytes, not a copy.
 */
export const RECENT_BYTES = 32 * 1024;

/** The most writes of a journal counted as recent. */
const RECENT_WRITES = 64;

/** A write counted as recent: its first byte and line, and its first event's revision and position. */
export interface RecentWrite {
  offset: number;
  line: number;
  revision: number;
  position: number;
}

interface Retained {
  journal: number | undefined;
  snapshot: number | undefined;
}

/**
 * One version of a stream's files: its snapshot (if any) and its journal with the offsets that describe it.
 * Compaction and deletion never change a version; they make a new one. A reader pins the version it starts
 * with. Before the writer renames or removes a file, it retires the current version, which opens descriptors
 * on the files about to be replaced: a pinned reader then reads to the end the files it started on, and a
 * read sees the stream either before the change or after it, never a mix. Appends only extend the current
 * version's journal; a reader stops at the length it saw.
 */
export class StreamFiles {
  readonly snapshot: ChangeMark | undefined;
  readonly journal: JournalInfo;
  /** Position of the change that made this version (0 for what open found and for appends' growth). */
  readonly since: number;
  #before: StreamFiles | undefined;
  #pins = 0;
  #retired: Promise<Retained> | undefined;
  /** The file system of the retired descriptors, to close them with. */
  #fs: FileSystem | undefined;
  /** The writes of this writer lately, oldest first, ending at the journal's end: where each began. */
  #recent: RecentWrite[] = [];

  /** `before` is the version the change at `since` replaced (pinned), held as `before`. */
  constructor(snapshot: ChangeMark | undefined, journal: JournalInfo, since = 0, before?: StreamFiles) {
    this.snapshot = snapshot;
    this.journal = journal;
    this.since = since;
    this.#before = before;
  }

  /**
   * The version before the change at `since`, held while `since` is above the feed's watermark: a feed read
   * that cannot show that change yet shows the stream as it was before it.
   */
  get before(): StreamFiles | undefined {
    return this.#before;
  }

  /** The same files as a version not retired: for the writer when a replacement it retired this one for failed. */
  unretired(): StreamFiles {
    const copy = new StreamFiles(this.snapshot, this.journal, this.since);
    copy.takeHeldFrom(this);
    return copy;
  }

  /** Takes over the version `previous` holds as `before`, for a version that replaces `previous` at its position. */
  takeHeldFrom(previous: StreamFiles): void {
    this.#before = previous.#before;
    previous.#before = undefined;
  }

  /** Stops holding `before` and returns it, for the caller to release. */
  dropHeld(): StreamFiles | undefined {
    const before = this.#before;
    this.#before = undefined;
    return before;
  }

  /**
   * Notes a write the writer just made durable at the journal's end before it: the latest writes, spanning up to
   * `RECENT_BYTES` (and `RECENT_WRITES` of them), count as written lately.
   */
  wrote(write: RecentWrite, length: number): void {
    const recent = this.#recent;
    recent.push(write);
    const end = write.offset + length;
    let drop = 0;
    while (drop < recent.length && (end - (recent[drop] as RecentWrite).offset > RECENT_BYTES || recent.length - drop > RECENT_WRITES)) drop++;
    if (drop > 0) recent.splice(0, drop);
  }

  /** Forgets what was written lately (the writer closed the journal's descriptor, or the file may change). */
  forgetRecent(): void {
    this.#recent = [];
  }

  /**
   * Where to start reading for the events with `revision ≥ from` (or `position ≥ from`) among the writes made
   * lately: the latest of them beginning at or before `from`. Undefined when the oldest kept begins after it.
   */
  recentStart(by: 'revision' | 'position', from: number): StartPoint | undefined {
    if (this.#retired) return undefined;
    const recent = this.#recent;
    // Writes go in order, so every event from `from` on is in that write or a later one.
    for (let index = recent.length - 1; index >= 0; index--) {
      const write = recent[index] as RecentWrite;
      if (write[by] <= from) return write;
    }
    return undefined;
  }

  /** Keeps this version readable until `release`. */
  pin(): void {
    this.#pins++;
  }

  /** Gives back a pin; the last one closes what retirement kept open. */
  release(): void {
    if (--this.#pins > 0 || !this.#retired) return;
    const retained = this.#retired;
    const fsl = this.#fs as FileSystem;
    // Closed once: a descriptor number closed twice could by then name another file.
    this.#fs = undefined;
    if (!fsl) return;
    void retained.then(async ({ journal, snapshot }) => {
      if (journal !== undefined) await fsl.close(journal).catch(() => undefined);
      if (snapshot !== undefined) await fsl.close(snapshot).catch(() => undefined);
    });
  }

  /**
   * Called by the writer before it replaces or removes this version's files: opens them, so readers that
   * pinned this version keep reading them. The writer holds a pin until it has made the next version current.
   */
  async retire(fsl: FileSystem, journalPath: string, snapshotPath: string): Promise<void> {
    this.pin();
    this.#fs = fsl;
    const openIfPresent = async (path: string, wanted: boolean) => {
      if (!wanted) return undefined;
      try {
        return await fsl.open(path, 'r');
      } catch (error) {
        if (errorCode(error) === 'ENOENT') return undefined;
        throw error;
      }
    };
    this.#retired = (async () => ({
      journal: await openIfPresent(journalPath, this.journal.length > 0),
      snapshot: await openIfPresent(snapshotPath, this.snapshot !== undefined),
    }))();
    try {
      await this.#retired;
    } catch (error) {
      // Nothing was replaced: the files at their paths are still this version's.
      this.#retired = undefined;
      this.#pins--;
      throw error;
    }
  }

  /** A descriptor on this version's journal: the file at `path`, or the one kept open when it was replaced. */
  async openJournal(fsl: FileSystem, path: string): Promise<JournalHandle | undefined> {
    if (!this.#retired) {
      const fd = await fsl.open(path, 'r');
      // Retirement comes before any replacement: if it has not begun, the file just opened is this version's.
      if (!this.#retired) return { fd, done: () => void fsl.close(fd).catch(() => undefined) };
      await fsl.close(fd).catch(() => undefined);
    }
    const { journal } = await this.#retired;
    return journal === undefined ? undefined : { fd: journal, done: () => undefined };
  }

  /** This version's snapshot as stored (undefined when the file is missing). */
  async readSnapshot(fsl: FileSystem, path: string, stream: StreamId): Promise<StoredSnapshot | undefined> {
    if (!this.#retired) {
      let bytes: Buffer | undefined;
      try {
        bytes = await fsl.readFile(path);
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw unreadable(path, error);
      }
      if (!this.#retired) return bytes && decodeSnapshot(bytes, path, stream);
    }
    const { snapshot } = await this.#retired;
    return snapshot === undefined ? undefined : decodeSnapshot(await readWhole(fsl, snapshot), path, stream);
  }
}

/** The whole content of an open file, read by position (other readers may share the descriptor). */
async function readWhole(fsl: FileSystem, fd: number): Promise<Buffer> {
  const { size } = await fsl.fstat(fd);
  const bytes = Buffer.allocUnsafe(size);
  const got = await readAll(fsl, fd, bytes, 0);
  return got === size ? bytes : bytes.subarray(0, got);
}
