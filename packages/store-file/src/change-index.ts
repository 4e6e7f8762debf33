/**
 * Items (streams) by the position of their latest change, so that a feed read from position `p` visits only
 * the streams changed at or after `p` instead of every stream. Changes are noted in the order their positions
 * are handed out, so the list stays sorted by position without sorting; an item's earlier entries are left
 * behind and skipped, and the list is compacted once they make up half of it. What open found is given at
 * once (`seed`) and sorted only when a read first needs it.
 */
export class ChangeIndex<T> {
  #positions: number[] = [];
  #items: T[] = [];
  /**
   * Each noted item's latest position: an entry of the list counts only while it is its item's latest. Items
   * found at open are not in it until noted again (an entry of an item not in it counts): open finds many.
   */
  readonly #latest = new Map<T, number>();
  /** Items and positions found at open, not yet sorted into the list. */
  #seeded: { items: T[]; positions: number[] } | undefined;
  /** Entries of items found at open and not noted since, as of the last compaction (an upper bound). */
  #seededLive = 0;

  /** Takes what open found: `items[i]` changed last at `positions[i]`. Replaces anything noted before. */
  seed(items: T[], positions: number[]): void {
    this.#positions = [];
    this.#items = [];
    this.#latest.clear();
    this.#seeded = { items, positions };
    this.#seededLive = items.length;
  }

  /** Notes that `item` changes at `position`, a position handed out no earlier than any noted before. */
  note(item: T, position: number): void {
    if (this.#latest.get(item) === position) return;
    this.#latest.set(item, position);
    this.#positions.push(position);
    this.#items.push(item);
    if (this.#items.length > 1024 && this.#items.length > 2 * (this.#latest.size + this.#seededLive)) this.#compact();
  }

  /** Every item whose latest change is at or after `from`, each once, in the order of those changes. */
  *from(from: number): Generator<T> {
    this.#sortSeeded();
    const positions = this.#positions;
    let low = 0;
    let high = positions.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((positions[mid] as number) < from) low = mid + 1;
      else high = mid;
    }
    // Read as the list is now: a change noted while the caller iterates is past what it asked for.
    const items = this.#items;
    const end = positions.length;
    for (let i = low; i < end; i++) {
      const item = items[i] as T;
      const latest = this.#latest.get(item);
      if (latest === undefined || latest === positions[i]) yield item;
    }
  }

  #sortSeeded(): void {
    const seeded = this.#seeded;
    if (!seeded) return;
    this.#seeded = undefined;
    const { items, positions } = seeded;
    const order = byPosition(positions);
    // Changes noted since open come after everything open found: their positions were handed out after it.
    const [laterPositions, laterItems] = [this.#positions, this.#items];
    this.#positions = [];
    this.#items = [];
    for (const index of order) {
      this.#positions.push(positions[index] as number);
      this.#items.push(items[index] as T);
    }
    for (let i = 0; i < laterItems.length; i++) {
      this.#positions.push(laterPositions[i] as number);
      this.#items.push(laterItems[i] as T);
    }
  }

  /** Drops the entries that are no longer their item's latest. */
  #compact(): void {
    const positions: number[] = [];
    const items: T[] = [];
    let seededLive = this.#seeded?.items.length ?? 0;
    for (let i = 0; i < this.#items.length; i++) {
      const item = this.#items[i] as T;
      const position = this.#positions[i] as number;
      const latest = this.#latest.get(item);
      if (latest === undefined) seededLive++;
      else if (latest !== position) continue;
      positions.push(position);
      items.push(item);
    }
    this.#positions = positions;
    this.#items = items;
    this.#seededLive = seededLive;
  }
}

/** Largest position, beyond the count of items, up to which `byPosition` sorts by counting instead of comparing. */
const COUNTING_SLACK = 1 << 22;

/**
 * The indexes of `positions` in rising order of their values (non-negative integers). Open sorts one per stream:
 * when the largest is not far beyond their count, counting them is much cheaper than comparing them.
 */
function byPosition(positions: readonly number[]): number[] {
  let max = 0;
  for (const position of positions) if (position > max) max = position;
  if (max > positions.length * 8 + COUNTING_SLACK) {
    return Array.from(positions.keys()).sort((a, b) => (positions[a] as number) - (positions[b] as number));
  }
  const counts = new Uint32Array(max + 2);
  for (const position of positions) counts[position + 1] = (counts[position + 1] as number) + 1;
  for (let value = 1; value < counts.length; value++) counts[value] = (counts[value] as number) + (counts[value - 1] as number);
  const order = new Array<number>(positions.length);
  for (let index = 0; index < positions.length; index++) {
    const position = positions[index] as number;
    order[counts[position] as number] = index;
    counts[position] = (counts[position] as number) + 1;
  }
  return order;
}
