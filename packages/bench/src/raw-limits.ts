import type { Timed } from './stats.js';

/** The families of raw limits: what the machine does with no store in the way. */
export type RawFamilyName = 'memory' | 'file' | 'sqlite' | 'postgres';

/** A read of many events: how many, how long, and the peak RSS growth while reading. */
export interface RawRead {
  events: number;
  ms: number;
  rssGrowthMb: number;
}

/**
 * The least work a store of one kind must do for each scenario, done directly on the file system or the
 * database driver. Setup (writing what is read back) is untimed; only the measured part is in the result.
 */
export interface RawFamily {
  readonly name: RawFamilyName;
  /** What the limit is, in words, for the table's legend. */
  readonly describe: Record<RawOperation, string>;
  /**
   * A writer of one stream: write `i` stores events [i·batchSize, (i+1)·batchSize) durably before it returns.
   * The bytes of the first `writes` writes are prepared when it opens, so only the writing is timed.
   */
  appendBatches(dir: string, batchSize: number, writes: number): Promise<RawWriter>;
  /**
   * Where each new stream is a file of its own: write `i` creates stream `i` and makes `writesPerStream` single
   * events of it durable one after another (the first with its directory entry). The least a round trip of
   * calls on a new session costs there; absent where a new stream is only rows or lines of a shared log.
   */
  newStreamWrites?(dir: string, writesPerStream: number): Promise<RawWriter>;
  /**
   * A writer of `streams` streams: write `i` stores one event in every stream, all made durable together (where
   * the streams share one log, one write and one sync: the same limit as as many appends to one stream).
   */
  appendSpread(dir: string, streams: number, writes: number): Promise<RawWriter>;
  /** Writes one stream of `events` events (untimed); the returned function reads and folds it, timed. */
  replay(dir: string, events: number): Promise<() => Promise<RawRead>>;
  /** Writes `events` events spread over `streams` streams (untimed); the returned function reads them all, timed. */
  readAll(dir: string, events: number, streams: number): Promise<() => Promise<RawRead>>;
  /**
   * Writes `perStream` events to each of `streams` new streams, the rows of `group` streams at a time in
   * statements of at most `batch` rows per stream (as many appends in flight would share them), timed. Absent
   * where no such limit is measured: the store's fill is then reported without a ratio.
   */
  fillSpread?(dir: string, streams: number, perStream: number, group: number, batch: number): Promise<Timed>;
  /**
   * Writes `segments` sealed segments of streams of `perStream` events each, where one stream in `keepEvery`
   * stays live (untimed); then copies each segment's live lines as cleaning must, timed: read the segment, write
   * its live lines to a new file, fdatasync it, rename it over the segment. Absent where a store has no segments.
   */
  cleanSegments?(dir: string, segments: number, perStream: number, keepEvery: number): Promise<RawCopy>;
  /** Folds a stream of `events` events, stores the result durably and drops the events. */
  compact(dir: string, events: number): Promise<Timed>;
  /** Opens `sessions` streams of `eventsPerSession` events each and reads them all. */
  coldOpen(dir: string, sessions: number, eventsPerSession: number): Promise<Timed>;
}

/** A timed copy: bytes copied and how long it took. */
export interface RawCopy {
  bytes: number;
  ms: number;
}

/** Durable raw writes, opened once and then called in timed chunks. */
export interface RawWriter {
  write(index: number): void | Promise<void>;
  close(): Promise<void>;
}

/** The operations a raw family measures. */
export type RawOperation = 'appendBatches' | 'appendSpread' | 'replay' | 'readAll' | 'compact' | 'coldOpen';

/** Raw measurements of one run, each taken once and shared by every store compared with it. */
export class RawLimits {
  readonly #cache = new Map<string, Promise<unknown>>();
  readonly #families: ReadonlyMap<RawFamilyName, RawFamily>;

  constructor(families: readonly RawFamily[]) {
    this.#families = new Map(families.map((family) => [family.name, family]));
  }

  /** The family named `name`. */
  family(name: RawFamilyName): RawFamily {
    const family = this.#families.get(name);
    if (!family) throw new Error(`bench: no raw family ${name}`);
    return family;
  }

  /** The measurement under `key` for `family`, taken by `measure` the first time it is asked for. */
  measure<T>(family: RawFamilyName, key: string, measure: (family: RawFamily) => Promise<T>): Promise<T> {
    const id = `${family}:${key}`;
    let found = this.#cache.get(id) as Promise<T> | undefined;
    if (!found) {
      found = measure(this.family(family));
      this.#cache.set(id, found);
    }
    return found;
  }
}
