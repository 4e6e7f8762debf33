import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, platform, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Volumes } from './config.js';
import { rawFile } from './raw/file.js';
import { rawMemory } from './raw/memory.js';
import { dropBenchData, rawPostgres } from './raw/postgres.js';
import { rawSqlite } from './raw/sqlite.js';
import { RawLimits, type RawFamily } from './raw-limits.js';
import type { BenchReport, Machine, Row } from './report.js';
import type { Measurement, Scenario, ScenarioContext } from './scenario.js';
import { SCENARIOS } from './scenarios/index.js';
import { loadService } from './service-api.js';
import { ratio } from './stats.js';
import { loadSubjects, type StoreSubject, type SubjectEntry } from './stores.js';
import { checkTargets } from './targets.js';

/** How to run the bench. */
export interface BenchOptions {
  /** Label of the volumes ("quick", "full", …). */
  mode: string;
  volumes: Volumes;
  /** Measure reads of reopenable stores in a child process (default true). */
  isolate?: boolean;
  /** Only these stores / scenarios (by name / id); all when empty. */
  stores?: readonly string[];
  scenarios?: readonly string[];
  /** Scenario list (default: all registered). */
  registry?: readonly Scenario[];
  /** Store list (default: every registered store). */
  subjects?: readonly SubjectEntry[];
  /** Raw families (default: memory, file, SQLite, PostgreSQL). */
  families?: readonly RawFamily[];
  /** Called as each row is measured (progress). */
  onRow?: (row: Row) => void;
}

/** The machine the run is on. */
export function describeMachine(): Machine {
  const list = cpus();
  return {
    cpus: list[0]?.model.trim() ?? 'unknown CPU',
    cores: list.length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    platform: `${platform()} ${release()}`,
    node: process.versions.node,
    tmpdir: tmpdir(),
  };
}

/** A measurement as a table row, its ratio computed from the rate and the raw rate. */
function toRow(base: Pick<Row, 'scenario' | 'title' | 'store' | 'unit'>, limit: string, m: Measurement): Row {
  const r = ratio(m.rate, m.rawRate);
  return {
    ...base,
    ...(m.variant ? { scenario: m.variant.id, title: m.variant.title, ...(m.variant.unit ? { unit: m.variant.unit } : {}) } : {}),
    status: 'ok',
    limit: m.limit ?? limit,
    rate: m.rate,
    ...(m.latency ? { p50Ms: m.latency.p50Ms, p99Ms: m.latency.p99Ms } : {}),
    ...(m.rawRate === undefined ? {} : { rawRate: m.rawRate }),
    ...(r === undefined ? {} : { ratio: r }),
    ...(m.rssGrowthMb === undefined ? {} : { rssGrowthMb: m.rssGrowthMb }),
    ...(m.rawRssGrowthMb === undefined ? {} : { rawRssGrowthMb: m.rawRssGrowthMb }),
    ...(m.heapGrowthMb === undefined ? {} : { heapGrowthMb: m.heapGrowthMb }),
    ...(m.note ? { note: m.note } : {}),
  };
}

/**
 * The rows of one scenario on one store: n/a when the store lacks what the scenario needs, else the
 * measurement; a failure is run once more (a peer may fail transiently under load, and the row says so).
 */
async function measureCell(
  context: ScenarioContext,
  scenario: Scenario,
  subject: StoreSubject,
  base: Pick<Row, 'scenario' | 'title' | 'store' | 'unit'>,
  limit: string,
  service: Promise<unknown>,
): Promise<Row[]> {
  const lacking = scenario.requires.find((capability) => subject.lacks[capability] !== undefined);
  if (lacking) return [{ ...base, status: 'n/a', limit, note: `n/a (${subject.lacks[lacking]})` }];
  if (scenario.requires.includes('service') && !(await service)) return [{ ...base, status: 'n/a', limit, note: 'n/a (service not built)' }];
  let firstError: unknown;
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await scenario.run(context, subject);
      const note = [attempt === 0 ? undefined : `retried once after: ${reason(firstError)}`, subject.takeNote?.()].filter(Boolean).join('; ');
      return (Array.isArray(result) ? result : [result]).map((m) => toRow(base, limit, note ? { ...m, note: m.note ? `${m.note}; ${note}` : note } : m));
    } catch (error) {
      subject.takeNote?.();
      if (attempt > 0) return [{ ...base, status: 'error', limit, note: `error: ${reason(error)}` }];
      firstError = error;
    }
  }
}

/** The first line of an error's message, for a table cell. */
function reason(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]?.slice(0, 120) ?? 'unknown error';
}

/**
 * Runs every scenario against every store, scenario by scenario (so a store and its raw limit are measured
 * close together), and checks the targets. Data lives under one temp directory, removed at the end.
 */
export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const startedAt = new Date();
  const root = await mkdtemp(join(tmpdir(), 'sessionfold-bench-'));
  const raw = new RawLimits(options.families ?? [rawMemory, rawFile, rawSqlite, rawPostgres]);
  let dirs = 0;
  const service = loadService();
  const context: ScenarioContext = {
    volumes: options.volumes,
    isolate: options.isolate ?? true,
    raw,
    dir: (label) => mkdtemp(join(root, `${String(++dirs).padStart(3, '0')}-${label}-`)),
    service: () => service,
  };
  const subjects = await loadSubjects(options.stores ?? [], options.subjects);
  const scenarios = (options.registry ?? SCENARIOS).filter((s) => !options.scenarios?.length || options.scenarios.includes(s.id));
  const rows: Row[] = [];
  // An interrupted run still removes its data.
  const onSignal = (signal: NodeJS.Signals) => {
    rmSync(root, { recursive: true, force: true });
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (const scenario of scenarios) {
      for (const { name, subject, unavailable } of subjects) {
        const base = { scenario: scenario.id, title: scenario.title, store: name, unit: scenario.unit };
        const limit = subject ? (scenario.limitText ?? `${subject.raw}: ${raw.family(subject.raw).describe[scenario.rawOperation]}`) : '';
        const measured = subject
          ? await measureCell(context, scenario, subject, base, limit, service)
          : [{ ...base, status: 'n/a' as const, limit, note: unavailable ?? 'n/a' }];
        for (const row of measured) {
          rows.push(row);
          options.onRow?.(row);
        }
      }
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await rm(root, { recursive: true, force: true });
    await dropBenchData();
  }
  return {
    mode: options.mode,
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    machine: describeMachine(),
    rows,
    targets: checkTargets(rows),
  };
}
