import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { decodeLine } from './journal-codec.js';
import { errorCode, listDir, syncDir, type FileSystem } from './fs-layer.js';
import type { Layout } from './layout.js';

/**
 * Blanks made in one go (one fsync of their directory), and how few are left when the next batch starts. A batch
 * takes a few milliseconds (more while appends keep the disk busy); at a thousand new streams a second, starting
 * it with sixteen left keeps appends from running out (with four left, one start in five did).
 */
const BATCH = 32;
const LOW = 16;
/**
 * After a batch failed (a full disk, too many open files), new journals are created as before, and blanks are
 * tried again after this long, doubling up to `RETRY_MAX_MS` while they keep failing.
 */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 60_000;
/** How far into a blank its first line is looked for: a first record is at most one event line long. */
const FIRST_LINE_LIMIT = 4 * 1024 * 1024;

/** A blank ready to become a journal: its path and a descriptor open for reading and writing (reads of what was just written use it). */
export interface Blank {
  readonly path: string;
  readonly fd: number;
}

/** `<dir>/blanks/` entries made by this module. */
export function isBlankName(name: string): boolean {
  return /^blank-[0-9a-f]{16}$/.test(name);
}

/**
 * Empty journal files made durable ahead of need in `<dir>/blanks/` and `<dir>/blanks/alternate/`. A new stream's journal is a blank renamed
 * into `streams/`, so its first append waits on the journal's fdatasync alone instead of also on an fsync of
 * `streams/`. The rename is made durable later — by the next batch of blanks, which fsyncs `streams/` too, and
 * at close. A crash of the machine before then can lose only the rename: the records are in the blank's inode,
 * fdatasynced before they were acknowledged, and the next writer to open the store moves them back into place
 * (`recover`) before it reads the streams. A process that dies keeps every rename (the kernel has it).
 *
 * Blanks are used oldest first, and a batch is made in whichever of the two directories holds fewer of those
 * left, so it is made where no rename is taking blanks out of: a rename waits for the directory's lock, which a create holds
 * while the file system looks for a free inode (on ext4 without a journal, skipping recently deleted ones
 * took 0.2–0.3 ms a rename in one directory, against 0.035 ms in two).
 */
export class BlankJournals {
  readonly #fs: FileSystem;
  readonly #layout: Layout;
  /** Oldest first: the blanks of the batch before are used before those of the last one. */
  readonly #ready: Blank[] = [];
  #making: Promise<void> | undefined;
  /** `blanks/alternate/` is known to exist durably (its entry in `blanks/` was fsynced). */
  #alternateMade = false;
  /** When a failed batch may be tried again (`performance.now()` time), and how long the next wait after a failure is. */
  #retryAt = 0;
  #retryMs = RETRY_FIRST_MS;
  #closed = false;
  /** A journal was renamed into `streams/` since that directory was last fsynced. */
  #namesUnsynced = false;

  constructor(fsl: FileSystem, layout: Layout) {
    this.#fs = fsl;
    this.#layout = layout;
  }

  /**
   * Run by a writer at open, before anything lists `streams/`: a blank holding records is the journal of the
   * stream its first line names, whose rename a crash lost, and is put back under that name (unless a journal
   * of that name exists: then it is left for `verify` to report). Empty blanks are kept for use.
   */
  async recover(): Promise<void> {
    const empty: string[] = [];
    let restored = false;
    const found = await listBlanks(this.#fs, this.#layout);
    for (const { path } of found) {
      const read = await readBlank(this.#fs, path);
      if (read === 'empty') {
        empty.push(path);
        continue;
      }
      // Bytes that are not a journal, or a stream that has a journal of its own: left for `verify` to report.
      if ('reason' in read) continue;
      let journal: string;
      try {
        journal = this.#layout.journal(read.stream);
      } catch {
        continue;
      }
      if (await exists(this.#fs, journal)) continue;
      await this.#fs.rename(path, journal);
      restored = true;
    }
    if (restored || empty.length > 0) {
      // Names put back are made durable; so is a blank made just before a crash, before one is used.
      const holding = new Set(found.map(({ dir }) => dir));
      await Promise.all([restored ? syncDir(this.#fs, this.#layout.streams) : undefined, ...[...holding].map((dir) => syncDir(this.#fs, dir))]);
    }
    for (const path of empty) {
      try {
        this.#ready.push({ path, fd: await this.#fs.open(path, 'r+') });
      } catch {
        // Not usable: new journals are created as before until the next batch.
      }
    }
  }

  /** Starts making blanks in the background when few are left; never waited on by an append. */
  prepare(): void {
    if (this.#making || this.#closed || this.#ready.length >= LOW || performance.now() < this.#retryAt) return;
    this.#making = this.#make()
      .then(() => {
        this.#retryMs = RETRY_FIRST_MS;
      })
      .catch(() => {
        this.#retryAt = performance.now() + this.#retryMs;
        this.#retryMs = Math.min(RETRY_MAX_MS, this.#retryMs * 2);
      })
      .finally(() => {
        this.#making = undefined;
      });
  }

  /** A durable empty blank to rename into place as a new journal, or undefined (create the journal as before). */
  take(): Blank | undefined {
    const blank = this.#ready.shift();
    this.prepare();
    return blank;
  }

  /** After `blank` was renamed to a journal: the next fsync of `streams/` makes the name durable. */
  renamed(): void {
    this.#namesUnsynced = true;
  }

  /** Gives back a blank that could not be renamed (it is still empty and durable). */
  giveBack(blank: Blank): void {
    this.#ready.unshift(blank);
  }

  /** Waits for the batch being made, makes every rename durable, and closes the blanks' descriptors (they stay for the next open). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#making;
    await this.#syncNames();
    for (const blank of this.#ready.splice(0)) await this.#fs.close(blank.fd).catch(() => undefined);
  }

  async #make(): Promise<void> {
    // The directory holding fewer of the blanks still to be used: the one renames are not taking them from.
    const [first, second] = this.#layout.blankDirs;
    const inFirst = this.#ready.filter((blank) => dirname(blank.path) === first).length;
    const dir = inFirst <= this.#ready.length - inFirst ? first : second;
    await this.#fs.mkdir(dir, 0o700);
    if (dir !== this.#layout.blanks && !this.#alternateMade) {
      // Its blanks are durable only once its own name is.
      await syncDir(this.#fs, this.#layout.blanks);
      this.#alternateMade = true;
    }
    const made: Blank[] = [];
    try {
      // Opened together: one after another, each waits for the thread pool behind the appends' work.
      const opened = await Promise.allSettled(
        Array.from({ length: BATCH }, async () => {
          const path = join(dir, `blank-${randomBytes(8).toString('hex')}`);
          made.push({ path, fd: await this.#fs.open(path, 'wx+', 0o600) });
        }),
      );
      const failed = opened.find((outcome) => outcome.status === 'rejected');
      if (failed) throw failed.reason;
      const names = this.#namesUnsynced;
      this.#namesUnsynced = false;
      try {
        await Promise.all([syncDir(this.#fs, dir), names ? syncDir(this.#fs, this.#layout.streams) : undefined]);
      } catch (error) {
        if (names) this.#namesUnsynced = true;
        throw error;
      }
    } catch (error) {
      // Not known durable, and the batch is tried again later: none of them is kept.
      for (const blank of made) {
        await this.#fs.close(blank.fd).catch(() => undefined);
        await this.#fs.unlink(blank.path).catch(() => undefined);
      }
      throw error;
    }
    if (this.#closed) {
      for (const blank of made) await this.#fs.close(blank.fd).catch(() => undefined);
      return;
    }
    this.#ready.push(...made);
  }

  async #syncNames(): Promise<void> {
    if (!this.#namesUnsynced) return;
    this.#namesUnsynced = false;
    await syncDir(this.#fs, this.#layout.streams);
  }
}

/** Every blank in `blanks/` and `blanks/alternate/`, with the directory it is in. */
export async function listBlanks(fsl: FileSystem, layout: Layout): Promise<{ dir: string; path: string }[]> {
  const listed = await Promise.all(
    layout.blankDirs.map(async (dir) => (await listDir(fsl, dir)).filter(isBlankName).map((name) => ({ dir, path: join(dir, name) }))),
  );
  return listed.flat();
}

/** 'empty', the stream named by the blank's first record, or why its bytes are not one. */
export async function readBlank(fsl: FileSystem, path: string): Promise<'empty' | { stream: string } | { reason: string }> {
  // Nearly always empty: its size says so without opening it.
  if ((await fsl.lstat(path)).size === 0) return 'empty';
  const fd = await fsl.open(path, 'r');
  try {
    let buffer = Buffer.alloc(64 * 1024);
    let length = 0;
    for (;;) {
      const read = await fsl.read(fd, buffer, length, buffer.length - length, length);
      if (read === 0) break;
      length += read;
      const newline = buffer.subarray(0, length).indexOf(0x0a);
      if (newline >= 0) return streamOfLine(buffer, newline);
      if (length === buffer.length) {
        if (length >= FIRST_LINE_LIMIT) return { reason: `no record ends in its first ${FIRST_LINE_LIMIT} bytes` };
        const bigger = Buffer.alloc(buffer.length * 2);
        buffer.copy(bigger, 0, 0, length);
        buffer = bigger;
      }
    }
    return length === 0 ? 'empty' : { reason: `its ${length} bytes end before the first record does` };
  } finally {
    await fsl.close(fd).catch(() => undefined);
  }
}

function streamOfLine(buffer: Buffer, newline: number): { stream: string } | { reason: string } {
  const decoded = decodeLine(buffer, 0, newline);
  if ('reason' in decoded) return { reason: `its first line: ${decoded.reason}` };
  const stream = (decoded.value as { stream?: unknown } | null)?.stream;
  return typeof stream === 'string' ? { stream } : { reason: 'its first record names no stream' };
}

async function exists(fsl: FileSystem, path: string): Promise<boolean> {
  try {
    await fsl.lstat(path);
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
}
