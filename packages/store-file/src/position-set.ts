import { CorruptionError } from '@sessionfold/core/kernel';

/** Positions per chunk of the set: 2^16, so a chunk is 8 KiB of bits. */
const CHUNK_BITS = 16;
const CHUNK_WORDS = (1 << CHUNK_BITS) >>> 5;

/**
 * The positions found while opening a store, across every journal line, snapshot and tombstone. The single
 * writer hands out each position once, so one found twice means a line or a journal was copied or moved
 * (for journals of release 0.1.0, whose lines do not name their stream, this is how a copy is caught).
 * Positions are dense integers: a bit each, in chunks allocated as they are touched, costs far less than a
 * set of numbers and one lookup per line.
 */
export class PositionSet {
  readonly #chunks = new Map<number, Uint32Array>();
  #lastIndex = -1;
  #last: Uint32Array | undefined;

  /** Records that `path` holds `position` (at `line`); a position already recorded is corruption there. */
  claim(position: number, path: string, line: number | undefined): void {
    const index = Math.floor(position / (1 << CHUNK_BITS));
    let chunk = index === this.#lastIndex ? this.#last : this.#chunks.get(index);
    if (!chunk) this.#chunks.set(index, (chunk = new Uint32Array(CHUNK_WORDS)));
    this.#lastIndex = index;
    this.#last = chunk;
    const offset = position - index * (1 << CHUNK_BITS);
    const word = offset >>> 5;
    const bit = 1 << (offset & 31);
    if ((chunk[word] as number) & bit) {
      throw new CorruptionError(path, line, `position ${position} is also used elsewhere in the store: a line or journal was copied or moved`);
    }
    chunk[word] = (chunk[word] as number) | bit;
  }
}
