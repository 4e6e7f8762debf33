import type { EventStore } from '@sessionfold/core';
import type { Volumes } from './config.js';
import { benchEvents } from './fixtures.js';
import type { RawLimits, RawOperation } from './raw-limits.js';
import type { SessionService } from './service-api.js';
import type { LatencySummary } from './stats.js';
import type { Capability, StoreSubject } from './stores.js';

/** What a scenario measured on one store, next to the raw limit measured in the same run. */
export interface Measurement {
  /** Operations per second (the scenario's unit). */
  rate: number;
  latency?: LatencySummary;
  /** The raw limit in the same unit; the ratio is `rate / rawRate`. */
  rawRate?: number;
  /** Peak RSS growth over the baseline while the scenario ran, MiB. */
  rssGrowthMb?: number;
  rawRssGrowthMb?: number;
  /** Heap held once the store is open, over an empty store opened the same way, MiB. */
  heapGrowthMb?: number;
  note?: string;
  /** What the raw limit is, when a variant's differs from the scenario's. */
  limit?: string;
  /** Set when one run measures several variants: each becomes its own row under this id and title (and unit, when given). */
  variant?: { id: string; title: string; unit?: string };
}

/** Everything a scenario gets from the harness. */
export interface ScenarioContext {
  readonly volumes: Volumes;
  /** Measure reads of reopenable stores in a child process, so peak RSS is the read's alone. */
  readonly isolate: boolean;
  readonly raw: RawLimits;
  /** A fresh empty directory, removed when the run ends. */
  dir(label: string): Promise<string>;
  /** The session service factory, or undefined while it is not built. */
  service(): Promise<SessionService | undefined>;
}

/** One measured situation, run against every store that has what it `requires`. */
export interface Scenario {
  /** Stable id used in JSON and by the targets. */
  readonly id: string;
  /** Label in the table. */
  readonly title: string;
  /** Unit of `rate`, e.g. "events/s". */
  readonly unit: string;
  readonly requires: readonly Capability[];
  /** The raw family operation this scenario compares with (see `RawFamily.describe`). */
  readonly rawOperation: RawOperation;
  /** Overrides the limit's description when the scenario's limit is not the raw operation alone. */
  readonly limitText?: string;
  /** Measures the store; several measurements when the scenario has variants (each with `variant` set). */
  run(context: ScenarioContext, subject: StoreSubject): Promise<Measurement | Measurement[]>;
}

/** Appends `count` benchmark events to `stream` in batches of `batch` (setup, untimed); returns the revision. */
export async function fillStream(store: EventStore, stream: string, count: number, batch: number, from = 0): Promise<number> {
  let revision = from;
  for (let i = 0; i < count; i += batch) {
    const size = Math.min(batch, count - i);
    const result = await store.append(stream, benchEvents(from + i, size), { expectedRevision: revision === 0 ? 'no_stream' : revision });
    revision = result.revision;
  }
  return revision;
}

/** Opens a store from `subject` in `dir`, runs `body`, and closes it whatever happens. */
export async function withStore<T>(subject: StoreSubject, dir: string, body: (store: EventStore) => Promise<T>): Promise<T> {
  const store = await subject.open(dir);
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}
