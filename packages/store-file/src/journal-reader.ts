import { CorruptionError } from '@sessionfold/core/kernel';
import type { FileSystem } from './fs-layer.js';
import { decodeLine } from './journal-codec.js';

/** A complete, checksum-verified line: 1-based number, byte range `[offset, next)`, parsed payload and its checksum (hex). */
export interface Line {
  no: number;
  offset: number;
  next: number;
  value: unknown;
  hash: string;
}

/** Checks the line `buf[start, end)` (newline excluded) and parses its payload, or says why it is damaged. */
export type LineDecoder = (buf: Buffer, start: number, end: number) => { value: unknown } | { reason: string };

/** Hex characters of a line's checksum, which starts the line. */
const HASH_CHARS = 64;

const NEWLINE = 0x0a;
const EMPTY = Buffer.alloc(0);
/** Large reads: parsing from big chunks is several times faster than a line-by-line reader. */
export const CHUNK_BYTES = 1 << 20;

/**
 * Reads the lines of `fd` in `[start, end)` in large chunks, verifying each line's checksum and JSON.
 * A damaged complete line throws `CorruptionError` naming the file and line; bytes after the last newline
 * are not a line: they are left in `tail` for the caller to judge.
 */
export class LineReader {
  readonly #fs: FileSystem;
  readonly #fd: number;
  readonly #file: string;
  #position: number;
  #end: number;
  #lineNo: number;
  #leftover: Buffer = EMPTY;
  #chunkBytes: number;
  /** The chunk size reads grow to, doubling from the first one. */
  readonly #steadyBytes: number;
  #stopped = false;
  /** The next chunk, being read ahead of `visit` (`prefetch`). */
  #ahead: Promise<Buffer> | undefined;
  /** Set while `visit` waits for a chunk: a prefetch then would read the same bytes again. */
  #reading = false;
  /** The file ended before `end`: it is shorter than the caller expected. */
  short = false;
  /** Bytes after the last newline once `next()` has returned undefined. */
  tail: Buffer = EMPTY;
  /** File offset of `tail`. */
  tailOffset = 0;

  /**
   * Reads `chunkBytes` at a time; with `firstChunkBytes` smaller, the first read is that size and each next one
   * twice the last up to `chunkBytes`, so many readers started at once (a feed's read-ahead) hold little each.
   */
  constructor(
    fsl: FileSystem,
    fd: number,
    file: string,
    start: number,
    end: number,
    firstLine: number,
    chunkBytes = CHUNK_BYTES,
    firstChunkBytes = chunkBytes,
  ) {
    this.#fs = fsl;
    this.#fd = fd;
    this.#file = file;
    this.#position = start;
    this.#end = end;
    this.#lineNo = firstLine;
    this.#chunkBytes = Math.min(firstChunkBytes, chunkBytes);
    this.#steadyBytes = chunkBytes;
  }

  /** The 1-based number of the next line. */
  get lineNo(): number {
    return this.#lineNo;
  }

  /** Ends the reading early: the rest of the current chunk is skipped and the next call finds the end. */
  stop(): void {
    this.#stopped = true;
    this.#end = this.#position;
  }

  /** Starts reading the next chunk now, so that the `visit` that needs it waits less; its failure is that visit's. */
  prefetch(): void {
    if (this.#ahead || this.#reading || this.#position >= this.#end) return;
    this.#ahead = this.#readChunk(this.#leftover);
    this.#ahead.catch(() => undefined);
  }

  /** Resolves once no read started by `prefetch` is in flight: the descriptor may be closed then. */
  async settled(): Promise<void> {
    await this.#ahead?.catch(() => undefined);
  }

  /** The next lines (at least one), or undefined when `end` is reached. */
  async next(): Promise<Line[] | undefined> {
    const lines: Line[] = [];
    const more = await this.visit((value, no, offset, next, data, start) => {
      lines.push({ no, offset, next, value, hash: data.toString('latin1', start, start + HASH_CHARS) });
    });
    return more ? lines : undefined;
  }

  /**
   * Hands the next chunk's lines (at least one) to `visitor` without building a `Line` for each: the hot path
   * of replays. Resolves false, with nothing visited, once `end` is reached; the visitor may call `stop()`.
   * `decode` checks and parses each line (default `decodeLine`; `decodeStoredLine` leaves the data as text).
   */
  async visit(
    visitor: (value: unknown, no: number, offset: number, next: number, data: Buffer, start: number) => void,
    decode: LineDecoder = decodeLine,
  ): Promise<boolean> {
    for (;;) {
      if (!this.#ahead && this.#position >= this.#end) {
        this.tail = this.#leftover;
        this.tailOffset = this.#position - this.#leftover.length;
        this.#leftover = EMPTY;
        return false;
      }
      const ahead = this.#ahead;
      this.#ahead = undefined;
      this.#reading = true;
      let data: Buffer;
      try {
        data = await (ahead ?? this.#readChunk(this.#leftover));
      } finally {
        this.#reading = false;
      }
      const base = this.#position - data.length;
      let start = 0;
      let visited = 0;
      for (let nl = data.indexOf(NEWLINE, start); nl !== -1; nl = data.indexOf(NEWLINE, start)) {
        const decoded = decode(data, start, nl);
        if ('reason' in decoded) throw new CorruptionError(this.#file, this.#lineNo, decoded.reason);
        visitor(decoded.value, this.#lineNo++, base + start, base + nl + 1, data, start);
        visited++;
        start = nl + 1;
        if (this.#stopped) break;
      }
      this.#leftover = start === data.length || this.#stopped ? EMPTY : data.subarray(start);
      if (visited > 0) return true;
      // A line longer than a chunk: read bigger pieces until its newline turns up.
      this.#chunkBytes *= 2;
    }
  }

  /**
   * Reads the next chunk into one buffer after a copy of `leftover` (the start of a line cut by the last chunk):
   * copying those few bytes is cheaper than concatenating them with the whole chunk afterwards.
   */
  async #readChunk(leftover: Buffer): Promise<Buffer> {
    const want = Math.min(this.#chunkBytes, this.#end - this.#position);
    const chunk = Buffer.allocUnsafe(leftover.length + want);
    let got = leftover.copy(chunk, 0);
    const full = chunk.length;
    while (got < full) {
      const n = await this.#fs.read(this.#fd, chunk, got, full - got, this.#position + got - leftover.length);
      if (n === 0) break;
      got += n;
    }
    this.#position += got - leftover.length;
    if (this.#chunkBytes < this.#steadyBytes) this.#chunkBytes = Math.min(this.#chunkBytes * 2, this.#steadyBytes);
    // A file shorter than expected ends here: whatever is left over becomes the tail.
    if (got < full) {
      this.#end = this.#position;
      this.short = true;
    }
    return got === full ? chunk : chunk.subarray(0, got);
  }
}
