import type { Row, TargetResult } from './report.js';
import { formatMs, formatRatio } from './table.js';

/** A performance goal checked against a run's rows; missing rows give "n/a", never an exception. */
export interface Target {
  id: string;
  text: string;
  check(rows: readonly Row[]): Omit<TargetResult, 'id' | 'text'>;
}

const find = (rows: readonly Row[], scenario: string, store: string) =>
  rows.find((row) => row.scenario === scenario && row.store === store && row.status === 'ok');

/** `store` on `scenario` reaches at least `min` × its limit (`limit` names it: the raw limit unless said otherwise). */
function ratioAtLeast(store: string, scenario: string, min: number, label: string, limit = 'raw'): Target {
  return {
    id: `${store}:${scenario}`,
    text: `${store} ${label} ≥ ${min} × ${limit}`,
    check(rows) {
      const row = find(rows, scenario, store);
      if (row?.ratio === undefined) return { status: 'n/a', measured: 'not measured' };
      return { status: row.ratio >= min ? 'pass' : 'miss', measured: formatRatio(row.ratio) };
    },
  };
}

/** Peak RSS growth of `store` replaying one stream stays under `maxMb`. */
function replayBounded(store: string, maxMb: number): Target {
  return {
    id: `${store}:replay-rss`,
    text: `${store} replay peak RSS growth < ${maxMb} MB`,
    check(rows) {
      const row = find(rows, 'replay', store);
      if (row?.rssGrowthMb === undefined) return { status: 'n/a', measured: 'not measured' };
      return { status: row.rssGrowthMb < maxMb ? 'pass' : 'miss', measured: `+${row.rssGrowthMb.toFixed(1)} MB` };
    },
  };
}

/** The heap an open `store`'s index holds (over an empty store) stays under `maxMb`. */
function indexHeapBounded(store: string, maxMb: number, streams: string): Target {
  return {
    id: `${store}:index-heap`,
    text: `${store} index heap after open < ${maxMb} MB (${streams} streams in the full run)`,
    check(rows) {
      const row = find(rows, 'index-heap', store);
      if (row?.heapGrowthMb === undefined) return { status: 'n/a', measured: 'not measured' };
      return { status: row.heapGrowthMb < maxMb ? 'pass' : 'miss', measured: `+${row.heapGrowthMb.toFixed(1)} MB` };
    },
  };
}

/** The CLI's streaming commands, as the CLI scenario names its rows. */
const CLI_ROWS = ['cli-read', 'cli-tail', 'cli-export', 'cli-verify'];

/** Each of the CLI's streaming commands on `store` meets `meets`; `measured` lists every command's figure. */
function cliCommands(store: string, id: string, text: string, meets: (row: Row) => boolean, figure: (row: Row) => string): Target {
  return {
    id: `${store}:${id}`,
    text: `${store} ${text}`,
    check(rows) {
      const mine = CLI_ROWS.flatMap((scenario) => {
        const row = find(rows, scenario, store);
        return row ? [row] : [];
      });
      if (mine.length === 0) return { status: 'n/a', measured: 'not measured' };
      const measured = mine.map((row) => `${row.scenario.slice('cli-'.length)} ${figure(row)}`).join(', ');
      return { status: mine.every(meets) ? 'pass' : 'miss', measured };
    },
  };
}

/** The CLI's `read`, `tail`, `export` and `verify` on `store` each reach `min` × the raw read. */
function cliRatio(store: string, min: number): Target {
  return cliCommands(
    store,
    'cli',
    `CLI read, tail, export, verify ≥ ${min} × raw read`,
    (row) => (row.ratio ?? 0) >= min,
    (row) => formatRatio(row.ratio),
  );
}

/** The CLI's streaming commands on `store` each grow by less than `maxMb` over the loaded CLI. */
function cliBounded(store: string, maxMb: number): Target {
  return cliCommands(
    store,
    'cli-rss',
    `CLI read, tail, export, verify peak RSS growth < ${maxMb} MB`,
    (row) => row.rssGrowthMb !== undefined && row.rssGrowthMb < maxMb,
    (row) => (row.rssGrowthMb === undefined ? 'n/a' : `+${row.rssGrowthMb.toFixed(1)} MB`),
  );
}

/** `ours` is faster than `peer` on every scenario both ran. */
function aheadOf(ours: string, peer: string): Target {
  return {
    id: `${ours}:ahead-of:${peer}`,
    text: `${ours} ahead of ${peer} on every scenario both run`,
    check(rows) {
      const pairs = rows
        .filter((row) => row.store === peer && row.status === 'ok')
        .flatMap((theirs) => {
          const mine = find(rows, theirs.scenario, ours);
          return mine?.rate !== undefined && theirs.rate !== undefined ? [{ scenario: theirs.scenario, times: mine.rate / theirs.rate }] : [];
        });
      if (pairs.length === 0) return { status: 'n/a', measured: 'no common scenario' };
      const behind = pairs.filter((pair) => pair.times <= 1);
      const measured = pairs.map((pair) => `${pair.scenario} ${pair.times.toFixed(1)}×`).join(', ');
      return { status: behind.length === 0 ? 'pass' : 'miss', measured };
    },
  };
}

/** A service call takes about as long with many sessions in the store as with few (`limit` = the small store). */
function flatCost(call: string): Target {
  return {
    id: `service-scaling:${call}`,
    text: `service ${call}: as fast with many sessions as with few (≥ 0.67 ×)`,
    check(rows) {
      const mine = rows.filter((row) => row.scenario === `scaling-${call}` && row.status === 'ok' && row.ratio !== undefined);
      if (mine.length === 0) return { status: 'n/a', measured: 'not measured' };
      const worst = Math.min(...mine.map((row) => row.ratio as number));
      return { status: worst >= 0.67 ? 'pass' : 'miss', measured: mine.map((row) => `${row.store} ${formatRatio(row.ratio)}`).join(', ') };
    },
  };
}

/** Every store's median time of `scenario` stays under `maxMs`: an absolute target, with no raw limit. */
function timeUnder(scenario: string, maxMs: number, label: string): Target {
  return {
    id: `${scenario}:time`,
    text: `${label} < ${maxMs} ms (p50, every store)`,
    check(rows) {
      const mine = rows.filter((row) => row.scenario === scenario && row.status === 'ok' && row.p50Ms !== undefined);
      if (mine.length === 0) return { status: 'n/a', measured: 'not measured' };
      return {
        status: mine.every((row) => (row.p50Ms as number) < maxMs) ? 'pass' : 'miss',
        measured: mine.map((row) => `${row.store} ${formatMs(row.p50Ms)}`).join(', '),
      };
    },
  };
}

/** The project's performance goals. */
export const TARGETS: readonly Target[] = [
  ratioAtLeast('file', 'append-1', 0.8, 'durable append, 1 event/call'),
  ratioAtLeast('file', 'append-64-one-stream', 0.5, '64 in flight, 1 stream'),
  ratioAtLeast('file', 'append-64-streams', 0.5, '64 in flight, 64 streams'),
  ratioAtLeast('file', 'replay', 0.7, 'replay'),
  ratioAtLeast('sqlite', 'append-1', 0.8, 'append, 1 event/call'),
  ratioAtLeast('sqlite', 'append-100', 0.8, 'append, 100 events/call'),
  ratioAtLeast('sqlite', 'append-64-one-stream', 0.5, '64 in flight, 1 stream'),
  ratioAtLeast('sqlite', 'append-64-streams', 0.5, '64 in flight, 64 streams'),
  ratioAtLeast('sqlite', 'replay', 0.7, 'replay'),
  ratioAtLeast('sqlite', 'read-all', 0.7, 'readAll'),
  ratioAtLeast('postgres', 'append-1', 0.8, 'append, 1 event/call'),
  ratioAtLeast('postgres', 'append-64-one-stream', 0.5, '64 in flight, 1 stream'),
  ratioAtLeast('postgres', 'append-64-streams', 0.5, '64 in flight, 64 streams'),
  ratioAtLeast('postgres', 'replay', 0.7, 'replay'),
  ratioAtLeast('postgres', 'read-all', 0.7, 'readAll'),
  ratioAtLeast('postgres', 'read-all-fill', 0.5, 'fill of the readAll fixture', 'raw multi-row INSERT'),
  replayBounded('file', 100),
  replayBounded('sqlite', 100),
  ratioAtLeast('file', 'service-round-trip', 0.6, 'service round trip'),
  ratioAtLeast('sqlite', 'service-round-trip', 0.6, 'service round trip'),
  ratioAtLeast('file', 'service-concurrent-transcript', 2, '100 concurrent appendTranscript', 'the same calls one after another'),
  ratioAtLeast('sqlite', 'service-concurrent-transcript', 2, '100 concurrent appendTranscript', 'the same calls one after another'),
  replayBounded('postgres', 100),
  ratioAtLeast('file', 'open-history-depth', 0.77, 'open, 50-event sessions', 'the same open with 1-event sessions (within 1.3×)'),
  ratioAtLeast('sqlite', 'open-history-depth', 0.77, 'open, 50-event sessions', 'the same open with 1-event sessions (within 1.3×)'),
  ratioAtLeast('postgres', 'open-history-depth', 0.77, 'open, 50-event sessions', 'the same open with 1-event sessions (within 1.3×)'),
  ratioAtLeast('file', 'open-many', 0.33, 'open with many sessions', 'reading + parsing their summaries (within 3×)'),
  ratioAtLeast('sqlite', 'open-many', 0.33, 'open with many sessions', 'reading + parsing their summaries (within 3×)'),
  ratioAtLeast('postgres', 'open-many', 0.33, 'open with many sessions', 'reading + parsing their summaries (within 3×)'),
  ratioAtLeast('file', 'cleaning', 0.5, 'cleaning, live bytes copied/s', 'a raw copy of the live lines'),
  ratioAtLeast('file', 'cleaning-append-1', 0.5, 'append 1 event/call while cleaning, 1 / p99', 'the same without cleaning (p99 at most 2×)'),
  indexHeapBounded('file', 100, '100,000'),
  cliRatio('file', 0.7),
  cliRatio('sqlite', 0.7),
  cliRatio('postgres', 0.7),
  cliBounded('file', 100),
  cliBounded('sqlite', 100),
  cliBounded('postgres', 100),
  flatCost('start'),
  flatCost('enqueue'),
  flatCost('claim'),
  aheadOf('sqlite', 'emmett-sqlite'),
  aheadOf('file', 'emmett-sqlite'),
  aheadOf('postgres', 'emmett-postgresql'),
  timeUnder('inspect-sessions', 200, 'inspect: sessions list first page (100,000 sessions in the full run)'),
  timeUnder('inspect-timeline', 500, "inspect: a timeline's first page (1,000,000 events in the full run)"),
];

/** Checks every target against `rows`. */
export function checkTargets(rows: readonly Row[], targets: readonly Target[] = TARGETS): TargetResult[] {
  return targets.map((target) => ({ id: target.id, text: target.text, ...target.check(rows) }));
}
