import type { EventStore, StoreObserver } from '@sessionfold/core/kernel';
import { DEFAULT_MAX_EVENT_BYTES } from '@sessionfold/core/store-kit';
import { propertyTestEnv } from './property-env.js';

/**
 * What a store under test can do beyond the port's methods; every field is optional and read-only. The port's
 * optional members (`verify`, `follow`, `readStored`, `readAllStored`, `checkpoints`, `status`) are not declared
 * here: the suite runs the rules of each member the store has and skips, saying why, those of one it lacks.
 */
export interface EventStoreCapabilities {
  /**
   * Closes `store` and opens the same storage again. Enables the persistence checks and the reopen step
   * of the model-based run; without it those are skipped.
   */
  readonly reopen?: (store: EventStore) => Promise<EventStore>;
  /** The largest serialized event (type + data, in UTF-8 bytes) the store was configured to accept (default 1 MiB). */
  readonly maxEventBytes?: number;
  /** fast-check runs per property (default 30). The environment variable `SESSIONFOLD_PROPERTY_RUNS` overrides it. */
  readonly numRuns?: number;
  /** Most commands in one model-based run (default 50). */
  readonly maxCommands?: number;
  /** Whether concurrent calls on one store instance are supported and checked (default true). */
  readonly concurrentAppends?: boolean;
  /**
   * Opens a new, empty store whose `recordedAt` comes from `clock`. Enables the checks of what a store does
   * when its clock fails (throws, or returns an invalid `Date`); without it those are skipped.
   */
  readonly withClock?: (clock: () => Date) => EventStore | Promise<EventStore>;
  /** The longest `follow` takes to show a change made by another store object on the same storage (default 100 ms). */
  readonly followDelayMs?: number;
  /**
   * Opens a second store object on the storage of `store`, as another process would (the file store: a
   * read-only view). Enables the checks that `follow` sees changes made elsewhere; without it they are skipped.
   */
  readonly openSecond?: (store: EventStore) => Promise<EventStore>;
  /**
   * Opens a new, empty store that calls `observer` (the store's `observer` option). Enables the checks of the
   * `StoreObserver` hooks (appends, group commits, compactions, an observer that throws); without it they are skipped.
   */
  readonly withObserver?: (observer: StoreObserver) => EventStore | Promise<EventStore>;
}

/** Capabilities with every default filled in, plus the replay settings read from the environment. */
export interface ResolvedCapabilities {
  readonly reopen: ((store: EventStore) => Promise<EventStore>) | undefined;
  readonly maxEventBytes: number;
  readonly numRuns: number;
  readonly maxCommands: number;
  readonly concurrentAppends: boolean;
  readonly withClock: ((clock: () => Date) => EventStore | Promise<EventStore>) | undefined;
  readonly followDelayMs: number;
  readonly openSecond: ((store: EventStore) => Promise<EventStore>) | undefined;
  readonly withObserver: ((observer: StoreObserver) => EventStore | Promise<EventStore>) | undefined;
  /** fast-check seed, path and commands replay path to reproduce a reported failure. */
  readonly replay: { readonly seed?: number; readonly path?: string; readonly replayPath?: string };
}

/** The defaults, kept in this one place. */
export const DEFAULT_CAPABILITIES = Object.freeze({
  maxEventBytes: DEFAULT_MAX_EVENT_BYTES,
  numRuns: 30,
  maxCommands: 50,
  concurrentAppends: true,
  followDelayMs: 100,
});

/** Fills in defaults and applies the property-test variables of `env` (`propertyTestEnv`: runs, seed, path, replay path). */
export function resolveCapabilities(
  capabilities: EventStoreCapabilities = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
): ResolvedCapabilities {
  const { runs, seed, path, replayPath } = propertyTestEnv(env);
  const replay = { ...(seed === undefined ? {} : { seed }), ...(path === undefined ? {} : { path }), ...(replayPath === undefined ? {} : { replayPath }) };
  const resolved: ResolvedCapabilities = {
    reopen: capabilities.reopen,
    maxEventBytes: capabilities.maxEventBytes ?? DEFAULT_CAPABILITIES.maxEventBytes,
    numRuns: runs ?? capabilities.numRuns ?? DEFAULT_CAPABILITIES.numRuns,
    maxCommands: capabilities.maxCommands ?? DEFAULT_CAPABILITIES.maxCommands,
    concurrentAppends: capabilities.concurrentAppends ?? DEFAULT_CAPABILITIES.concurrentAppends,
    withClock: capabilities.withClock,
    followDelayMs: capabilities.followDelayMs ?? DEFAULT_CAPABILITIES.followDelayMs,
    openSecond: capabilities.openSecond,
    withObserver: capabilities.withObserver,
    replay: Object.freeze(replay),
  };
  if (!Number.isSafeInteger(resolved.maxEventBytes) || resolved.maxEventBytes < 64) {
    throw new Error(`capabilities.maxEventBytes must be an integer ≥ 64, got ${resolved.maxEventBytes}`);
  }
  for (const key of ['numRuns', 'maxCommands', 'followDelayMs'] as const) {
    if (!Number.isSafeInteger(resolved[key]) || resolved[key] < 1) throw new Error(`capabilities.${key} must be an integer ≥ 1`);
  }
  return Object.freeze(resolved);
}
