/**
 * The global position counter the single writer owns. Streams flush in parallel, so a later position can be
 * durable before an earlier one; the watermark is the highest position below which nothing is still being
 * written, and `readAll` shows nothing above it — a reader that saw position p can never later be offered a
 * change below p.
 */
export class Positions {
  #last: number;
  /** start → count of reserved ranges not yet settled; insertion order is start order, so the first is the lowest. */
  readonly #inFlight = new Map<number, number>();

  /** Told each time a range settles (once per flush, not per event), so followers in this process wake. */
  readonly #onSettle: (() => void) | undefined;

  constructor(last: number, onSettle?: () => void) {
    this.#last = last;
    this.#onSettle = onSettle;
  }

  /** Reserves `count` consecutive positions and returns the first. */
  reserve(count: number): number {
    const start = this.#last + 1;
    this.#last += count;
    this.#inFlight.set(start, count);
    return start;
  }

  /** Settles a reserved range, whether its write succeeded or failed (failed positions are simply never used). */
  settle(start: number): void {
    this.#inFlight.delete(start);
    this.#onSettle?.();
  }

  /**
   * Settles a reserved range whose positions were never written: when no later range was reserved since, they
   * are handed out again, so a failed write leaves the counter as it was.
   */
  release(start: number): void {
    const count = this.#inFlight.get(start);
    this.#inFlight.delete(start);
    if (count !== undefined && start + count - 1 === this.#last) this.#last = start - 1;
    // Like settle: the watermark may have moved past ranges settled meanwhile, and followers wait on it.
    this.#onSettle?.();
  }

  /** The last position handed out. */
  get last(): number {
    return this.#last;
  }

  /** Every position ≤ the watermark is settled. */
  get watermark(): number {
    for (const start of this.#inFlight.keys()) return start - 1;
    return this.#last;
  }
}
