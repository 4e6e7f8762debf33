/**
 * The environment variables of every property test in this repository, read and checked in one place:
 * `SESSIONFOLD_PROPERTY_RUNS` (runs per property), `SESSIONFOLD_PROPERTY_MAX_CALLS` (most commands in a
 * model-based run), and the three that replay a reported failure: `SESSIONFOLD_PROPERTY_SEED`,
 * `SESSIONFOLD_PROPERTY_PATH` and `SESSIONFOLD_PROPERTY_REPLAY_PATH` (fast-check's `replayPath`).
 */
export interface PropertyTestEnv {
  readonly runs?: number;
  readonly maxCommands?: number;
  readonly seed?: number;
  readonly path?: string;
  readonly replayPath?: string;
}

/** The replay variable's name; the older `SESSIONFOLD_PROPERTY_REPLAY` is still read when it is not set. */
export const REPLAY_PATH_VARIABLE = 'SESSIONFOLD_PROPERTY_REPLAY_PATH';
/** @deprecated Set `SESSIONFOLD_PROPERTY_REPLAY_PATH`; this name is read only when that one is not set. */
const OLD_REPLAY_VARIABLE = 'SESSIONFOLD_PROPERTY_REPLAY';

/** Environment variables as `process.env` holds them. */
export type EnvironmentVariables = Readonly<Record<string, string | undefined>>;

/** Reads and checks the property-test variables of `env` (unset or empty: left out); a malformed value throws, naming it. */
export function propertyTestEnv(env: EnvironmentVariables = process.env): PropertyTestEnv {
  const read: { -readonly [K in keyof PropertyTestEnv]: PropertyTestEnv[K] } = {};
  const runs = positiveInteger(env, 'SESSIONFOLD_PROPERTY_RUNS');
  if (runs !== undefined) read.runs = runs;
  const maxCommands = positiveInteger(env, 'SESSIONFOLD_PROPERTY_MAX_CALLS');
  if (maxCommands !== undefined) read.maxCommands = maxCommands;
  const seed = given(env, 'SESSIONFOLD_PROPERTY_SEED');
  if (seed !== undefined) {
    if (!/^-?\d+$/.test(seed) || !Number.isSafeInteger(Number(seed))) {
      throw new Error(`SESSIONFOLD_PROPERTY_SEED must be an integer, got ${JSON.stringify(seed)}`);
    }
    read.seed = Number(seed);
  }
  const path = given(env, 'SESSIONFOLD_PROPERTY_PATH');
  if (path !== undefined) {
    if (!/^\d+(:\d+)*$/.test(path)) throw new Error(`SESSIONFOLD_PROPERTY_PATH must be a fast-check path (3:1:0), got ${JSON.stringify(path)}`);
    read.path = path;
  }
  const replayPath = given(env, REPLAY_PATH_VARIABLE) ?? given(env, OLD_REPLAY_VARIABLE);
  if (replayPath !== undefined) read.replayPath = replayPath;
  return Object.freeze(read);
}

/** Runs per property: `SESSIONFOLD_PROPERTY_RUNS` when set (a long run is one variable away), else `fallback`. */
export function propertyRuns(fallback: number, env: EnvironmentVariables = process.env): number {
  return propertyTestEnv(env).runs ?? fallback;
}

function given(env: EnvironmentVariables, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

function positiveInteger(env: EnvironmentVariables, name: string): number | undefined {
  const value = given(env, name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new Error(`${name} must be an integer ≥ 1, got ${JSON.stringify(value)}`);
  return n;
}
