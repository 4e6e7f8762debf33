/** Positions per chunk: 2^16, so a chunk is 8 KiB of bits. */
const CHUNK_BITS = 16;
const CHUNK_WORDS = (1 << CHUNK_BITS) >>> 5;

/**
 * The feed positions seen so far, one bit each: positions are dense integers handed out once per store, so a
 * set of a million costs about 128 KiB, in chunks allocated as they are touched.
 */
export class PositionBits {
  readonly #chunks = new Map<number, Uint32Array>();

  /** Records `position`; false when it was recorded before. */
  claim(position: number): boolean {
    const index = Math.floor(position / (1 << CHUNK_BITS));
    let chunk = this.#chunks.get(index);
    if (!chunk) this.#chunks.set(index, (chunk = new Uint32Array(CHUNK_WORDS)));
    const offset = position - index * (1 << CHUNK_BITS);
    const word = offset >>> 5;
    const bit = 1 << (offset & 31);
    if ((chunk[word] as number) & bit) return false;
    chunk[word] = (chunk[word] as number) | bit;
    return true;
  }
}
