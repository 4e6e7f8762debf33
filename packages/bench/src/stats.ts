/** A latency summary in milliseconds. */
export interface LatencySummary {
  count: number;
  p50Ms: number;
  p99Ms: number;
}

/** The value at quantile `q` (0..1) of ascending `sorted`, nearest-rank; NaN when empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

/** Sorts a copy of `samples` (ms) and reports count, p50 and p99. */
export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  return { count: sorted.length, p50Ms: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99) };
}

/** The median of a few numbers. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Items per second for `count` items done in `ms` milliseconds. */
export function perSecond(count: number, ms: number): number {
  return ms > 0 ? (count * 1000) / ms : Number.POSITIVE_INFINITY;
}

/** `measured / limit`, or undefined when either side is missing or the limit is not positive. */
export function ratio(measured: number | undefined, limit: number | undefined): number | undefined {
  if (measured === undefined || limit === undefined || !Number.isFinite(measured) || !Number.isFinite(limit) || limit <= 0) return undefined;
  return measured / limit;
}

/** Tracks the peak resident set size above the baseline taken at construction; call `sample()` often. */
export class RssTracker {
  readonly baseline: number;
  #peak: number;

  constructor() {
    this.baseline = process.memoryUsage.rss();
    this.#peak = this.baseline;
  }

  /** Records the current RSS. */
  sample(): void {
    const rss = process.memoryUsage.rss();
    if (rss > this.#peak) this.#peak = rss;
  }

  /** Peak RSS seen, in bytes. */
  get peak(): number {
    return this.#peak;
  }

  /** Peak growth over the baseline, in MiB. */
  get growthMb(): number {
    return (this.#peak - this.baseline) / (1024 * 1024);
  }
}

/** A timed loop's result: how many operations, how long, and each one's latency. */
export interface Timed {
  ops: number;
  ms: number;
  latencies: number[];
}

/** Runs `op(i)` for i in [0, n) one after another, timing each call and the whole loop. */
export async function timeSequential(n: number, op: (i: number) => Promise<unknown> | unknown): Promise<Timed> {
  const latencies = new Array<number>(n);
  const start = performance.now();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await op(i);
    latencies[i] = performance.now() - t;
  }
  return { ops: n, ms: performance.now() - start, latencies };
}

/**
 * Keeps `workers` calls in flight: worker w runs `op(w, k, index)` for its k-th call (`index` counts every
 * call started, 0 to total − 1) until `total` calls have started. Latency is measured per call.
 */
export async function timeInFlight(total: number, workers: number, op: (worker: number, call: number, index: number) => Promise<unknown>): Promise<Timed> {
  const latencies: number[] = [];
  let started = 0;
  const start = performance.now();
  const worker = async (w: number) => {
    for (let k = 0; started < total; k++) {
      const index = started++;
      const t = performance.now();
      await op(w, k, index);
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  return { ops: latencies.length, ms: performance.now() - start, latencies };
}

/** Sums timed chunks: operations, milliseconds and latencies. */
export function mergeTimed(parts: readonly Timed[]): Timed {
  return { ops: parts.reduce((n, p) => n + p.ops, 0), ms: parts.reduce((n, p) => n + p.ms, 0), latencies: parts.flatMap((p) => p.latencies) };
}

/**
 * Runs `a(round)` and `b(round)` alternately for `rounds` rounds (b first on odd rounds) and sums each side,
 * so load from elsewhere on a shared machine falls on both sides alike instead of on whichever ran second.
 */
export async function alternate(rounds: number, a: (round: number) => Promise<Timed>, b: (round: number) => Promise<Timed>): Promise<[Timed, Timed]> {
  const left: Timed[] = [];
  const right: Timed[] = [];
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      left.push(await a(round));
      right.push(await b(round));
    } else {
      right.push(await b(round));
      left.push(await a(round));
    }
  }
  return [mergeTimed(left), mergeTimed(right)];
}
