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
  /** Each item's latest noted position: an entry of the list counts only while it is its item's latest. */
  readonly #latest = new Map<T, number>();
  /** Items and positions found at open, not yet sorted into the list. */
  #seeded: { items: T[]; positions: number[] } | undefined;

  /** Takes what open found: `items[i]` changed last at `positions[i]`. Replaces anything noted before. */
  seed(items: T[], positions: number[]): void {
    this.#positions = [];
    this.#items = [];
    this.#latest.clear();
    this.#seeded = { items, positions };
  }

  /** Notes that `item` changes at `position`, a position handed out no earlier than any noted before. */
  note(item: T, position: number): void {
    if (this.#latest.get(item) === position) return;
    this.#latest.set(item, position);
    this.#positions.push(position);
    this.#items.push(item);
    if (this.#items.length > 1024 && this.#items.length > 2 * this.#latest.size) this.#compact();
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
      if (this.#latest.get(item) === positions[i]) yield item;
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
      const item = items[index] as T;
      const position = positions[index] as number;
      if (!this.#latest.has(item)) this.#latest.set(item, position);
      this.#positions.push(position);
      this.#items.push(item);
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
    for (let i = 0; i < this.#items.length; i++) {
      const item = this.#items[i] as T;
      const position = this.#positions[i] as number;
      if (this.#latest.get(item) !== position) continue;
      positions.push(position);
      items.push(item);
    }
    this.#positions = positions;
    this.#items = items;
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
