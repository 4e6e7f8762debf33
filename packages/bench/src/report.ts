/** Whether a row holds a measurement, was not applicable, or failed. */
export type RowStatus = 'ok' | 'n/a' | 'error';

/** One line of the table: a scenario on one store, next to its raw limit from the same run. */
export interface Row {
  scenario: string;
  title: string;
  store: string;
  unit: string;
  status: RowStatus;
  rate?: number;
  p50Ms?: number;
  p99Ms?: number;
  /** The raw limit in the same unit, measured in the same run. */
  rawRate?: number;
  /** `rate / rawRate`: 1 means the store is as fast as the raw limit. */
  ratio?: number;
  /** Peak RSS growth over the baseline while the scenario's read ran, MiB. */
  rssGrowthMb?: number;
  rawRssGrowthMb?: number;
  /** Heap held once the store is open, over an empty store opened the same way, MiB. */
  heapGrowthMb?: number;
  /** What the raw limit is. */
  limit: string;
  note?: string;
}

/** A target from the project's performance goals, checked against one run. */
export interface TargetResult {
  id: string;
  text: string;
  status: 'pass' | 'miss' | 'n/a';
  measured: string;
}

/** The machine a run was measured on. */
export interface Machine {
  cpus: string;
  cores: number;
  memoryGb: number;
  platform: string;
  node: string;
  tmpdir: string;
}

/** Everything one run produced; `--json` writes this. */
export interface BenchReport {
  mode: string;
  startedAt: string;
  durationMs: number;
  machine: Machine;
  rows: Row[];
  targets: TargetResult[];
}
