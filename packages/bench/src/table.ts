import type { BenchReport, Row, TargetResult } from './report.js';

/** The table's columns, in order. */
export const COLUMNS = ['scenario', 'store', 'rate', 'unit', 'p50', 'p99', 'raw rate', 'ratio', 'peak RSS', 'note'] as const;

/** A rate with thousands separators, or "1.23M" above a million; "—" when missing. */
export function formatRate(rate: number | undefined): string {
  if (rate === undefined || !Number.isFinite(rate)) return '—';
  if (rate >= 1e6) return `${(rate / 1e6).toFixed(2)}M`;
  return Math.round(rate).toLocaleString('en-US');
}

/** Milliseconds with three significant digits; "—" when missing. */
export function formatMs(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms >= 100) return `${Math.round(ms)} ms`;
  return `${ms.toPrecision(3)} ms`;
}

/** A ratio as "0.85×"; "—" when missing. */
export function formatRatio(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '—' : `${value.toFixed(2)}×`;
}

/** Peak RSS growth as "+12.3 MB (raw +1.0)"; "—" when not measured. */
export function formatRss(row: Row): string {
  if (row.rssGrowthMb === undefined) return '—';
  const raw = row.rawRssGrowthMb === undefined ? '' : ` (raw +${row.rawRssGrowthMb.toFixed(1)})`;
  return `+${row.rssGrowthMb.toFixed(1)} MB${raw}`;
}

/** The cells of one row, in `COLUMNS` order. */
export function cells(row: Row): string[] {
  const note = row.status === 'ok' ? (row.note ?? '') : (row.note ?? row.status);
  return [
    row.title,
    row.store,
    row.status === 'ok' ? formatRate(row.rate) : row.status === 'n/a' ? 'n/a' : 'error',
    row.unit,
    formatMs(row.p50Ms),
    formatMs(row.p99Ms),
    formatRate(row.rawRate),
    formatRatio(row.ratio),
    formatRss(row),
    note,
  ];
}

/** Lays out a header and rows as a Markdown table with padded columns. */
export function markdownTable(header: readonly string[], body: readonly (readonly string[])[]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...body.map((line) => (line[i] ?? '').length)));
  const line = (values: readonly string[]) => `| ${values.map((value, i) => value.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

/** The results table as Markdown. */
export function formatRows(rows: readonly Row[]): string {
  return markdownTable(COLUMNS, rows.map(cells));
}

/** The targets as a Markdown table (target, result, measured). */
export function formatTargets(targets: readonly TargetResult[]): string {
  return markdownTable(
    ['target', 'result', 'measured'],
    targets.map((target) => [target.text, target.status, target.measured]),
  );
}

/** The raw limits used by the run, one line per scenario and family. */
export function formatLimits(rows: readonly Row[]): string {
  const seen = new Set(rows.filter((row) => row.limit).map((row) => `${row.title} — ${row.limit}`));
  return [...seen].map((line) => `- ${line}`).join('\n');
}

/** The whole report as text: machine, results, targets. */
export function formatReport(report: BenchReport): string {
  const m = report.machine;
  return [
    `sessionfold bench (${report.mode}) — ${report.startedAt}, ${(report.durationMs / 1000).toFixed(1)} s`,
    `machine: ${m.cpus}, ${m.cores} cores, ${m.memoryGb} GB, ${m.platform}, Node ${m.node}, data in ${m.tmpdir}`,
    '',
    formatRows(report.rows),
    '',
    'ratio = rate / raw rate, both measured in this run; raw limits:',
    formatLimits(report.rows),
    '',
    formatTargets(report.targets),
  ].join('\n');
}
