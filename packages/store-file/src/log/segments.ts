import { readSync } from 'node:fs';
import { join } from 'node:path';
import { StorageError } from '@sessionfold/core/kernel';
import { errorCode, listDir, nodeFileSystem, readAll, unreadable, type FileSystem } from '../fs-layer.js';

/** Digits of a segment's or an index snapshot's name: any safe integer fits. */
const NAME_DIGITS = 20;
const SEGMENT_NAME = /^(\d{20})\.jsonl$/;
/** A mark (position, offset, line) is kept at the first line at or after every this many bytes: where `readAll` starts to scan. */
export const MARK_BYTES = 256 * 1024;

/** Reads within this many bytes of a segment's end are made on the calling thread (see `Segment.read`). */
const RECENT_BYTES = 64 * 1024;
/** How many of the latest marked lines (each write's first) a segment remembers besides its sparse marks. */
const RECENT_MARKS = 64;

/** `n` as a segment or index snapshot name's number part. */
export function paddedName(n: number): string {
  return String(n).padStart(NAME_DIGITS, '0');
}

/** The file name of the segment whose number is `base`. */
export function segmentFileName(base: number): string {
  return `${paddedName(base)}.jsonl`;
}

/**
 * One segment file of the log. `size` is how many of its bytes the index holds (what reads may see); `marks`
 * flattened triples (position, offset, line) of lines a scan can start at. Its read descriptor opens on demand.
 */
export class Segment {
  size = 0;
  lines = 0;
  /** The inode its read descriptor has open, once it has one. */
  ino: number | undefined;
  readonly marks: number[] = [];
  /** The (position, offset, line) of the last `RECENT_MARKS` lines `mark` was told of, a ring. */
  readonly #recent: number[] = [];
  #next = 0;
  #fd: Promise<number> | undefined;

  /** `image`: the segment's bytes held in memory instead of a file (an older layout read as a log). */
  constructor(
    readonly base: number,
    readonly path: string,
    private readonly image?: Buffer,
  ) {}

  /** Notes that a line of `position` starts at `offset` (line `line`, 1-based), keeping one mark per `MARK_BYTES`. */
  mark(position: number, offset: number, line: number): void {
    const n = this.marks.length;
    if (n === 0 || offset - (this.marks[n - 2] as number) >= MARK_BYTES) this.marks.push(position, offset, line);
    this.#recent[this.#next] = position;
    this.#recent[this.#next + 1] = offset;
    this.#recent[this.#next + 2] = line;
    this.#next = (this.#next + 3) % (RECENT_MARKS * 3);
  }

  /**
   * Where a scan for records from `position` on may start: the offset and line of the last mark at or before it,
   * or of a recent write's first line when one is closer (a feed reader catching up reads only what it missed).
   */
  startFor(position: number): { offset: number; line: number } {
    let at = { offset: 0, line: 1 };
    for (let i = 0; i < this.marks.length && (this.marks[i] as number) <= position; i += 3) {
      at = { offset: this.marks[i + 1] as number, line: this.marks[i + 2] as number };
    }
    for (let i = 0; i < this.#recent.length; i += 3) {
      const offset = this.#recent[i + 1] as number;
      if ((this.#recent[i] as number) <= position && offset > at.offset) at = { offset, line: this.#recent[i + 2] as number };
    }
    return at;
  }

  /** The 1-based line that holds byte `offset`: counted from the last mark before it. */
  async lineAt(fsl: FileSystem, offset: number): Promise<number> {
    let from = { offset: 0, line: 1 };
    for (let i = 0; i < this.marks.length && (this.marks[i + 1] as number) <= offset; i += 3) {
      from = { offset: this.marks[i + 1] as number, line: this.marks[i + 2] as number };
    }
    const bytes = await this.read(fsl, from.offset, offset - from.offset);
    let line = from.line;
    for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) line++;
    return line;
  }

  /** The descriptor reads go through, opened once. */
  descriptor(fsl: FileSystem): Promise<number> {
    this.#fd ??= fsl.open(this.path, 'r').then(
      async (fd) => {
        this.ino = (await fsl.fstat(fd)).ino;
        return fd;
      },
      (cause: unknown) => {
        this.#fd = undefined;
        throw errorCode(cause) === 'ENOENT' ? new StorageError(`@sessionfold/store-file: ${this.path} is missing.`, { cause }) : unreadable(this.path, cause);
      },
    );
    return this.#fd;
  }

  /** Whether the file at the segment's path is no longer the one its descriptor reads (the writer cleaned it). */
  async replaced(fsl: FileSystem): Promise<boolean> {
    if (this.ino === undefined || this.image !== undefined) return false;
    try {
      return (await fsl.lstat(this.path)).ino !== this.ino;
    } catch {
      return true;
    }
  }

  /** Reads `length` bytes at `offset`; fewer only when the file is shorter. */
  async read(fsl: FileSystem, offset: number, length: number): Promise<Buffer> {
    if (this.image !== undefined) return this.image.subarray(offset, Math.min(this.image.length, offset + length));
    const fd = await this.descriptor(fsl);
    // The latest lines were just written: the page cache holds them, so the read is a copy, done inline rather
    // than through the thread pool (a feed reader catching up with this process's own writes reads only these).
    if (fsl === nodeFileSystem && offset >= this.size - RECENT_BYTES && length <= RECENT_BYTES) return this.#readInline(fd, offset, length);
    const bytes = Buffer.allocUnsafe(length);
    try {
      const got = await readAll(fsl, fd, bytes, offset);
      return got === length ? bytes : bytes.subarray(0, got);
    } catch (cause) {
      throw unreadable(this.path, cause);
    }
  }

  #readInline(fd: number, offset: number, length: number): Buffer {
    const bytes = Buffer.allocUnsafe(length);
    let got = 0;
    try {
      for (let n = 1; got < length && n > 0; got += n) n = readSync(fd, bytes, got, length - got, offset + got);
    } catch (cause) {
      throw unreadable(this.path, cause);
    }
    return got === length ? bytes : bytes.subarray(0, got);
  }

  /** The same segment with nothing known of it yet (an in-memory image stays itself): for a check from scratch. */
  reopened(): Segment {
    return this.image !== undefined ? this : new Segment(this.base, this.path);
  }

  /** Closes the read descriptor, if open. */
  async close(fsl: FileSystem): Promise<void> {
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd !== undefined) await fsl.close(await fd).catch(() => undefined);
  }
}

/** The segments of `logDir` in log order; a name that is not a segment's is left alone (the writer removes its own temporaries). */
export async function listSegments(fsl: FileSystem, logDir: string): Promise<Segment[]> {
  let names: string[];
  try {
    names = await listDir(fsl, logDir);
  } catch (cause) {
    throw unreadable(logDir, cause);
  }
  const bases = names.flatMap((name) => {
    const match = SEGMENT_NAME.exec(name);
    return match ? [Number(match[1])] : [];
  });
  bases.sort((a, b) => a - b);
  return bases.map((base) => new Segment(base, join(logDir, segmentFileName(base))));
}

/** The segment holding `position`: the last whose base is at most it (the first when none is). */
export function segmentIndexFor(segments: readonly Segment[], position: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((segments[mid] as Segment).base <= position) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
