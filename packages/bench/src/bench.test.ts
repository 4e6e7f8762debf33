import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseArgs } from './cli-args.js';
import { QUICK, TINY } from './config.js';
import type { Row } from './report.js';
import { runBench } from './run.js';
import { quantile, ratio, summarize } from './stats.js';
import { SUBJECTS, type SubjectEntry } from './stores.js';
import { COLUMNS, formatReport, formatRows } from './table.js';
import { checkTargets, TARGETS } from './targets.js';

const row = (over: Partial<Row>): Row => ({
  scenario: 'append-1',
  title: 'append 1 event/call',
  store: 'file',
  unit: 'events/s',
  status: 'ok',
  limit: 'file: test',
  ...over,
});

describe('stats', () => {
  it('quantiles are nearest-rank over sorted samples', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(sorted, 0.5)).toBe(50);
    expect(quantile(sorted, 0.99)).toBe(99);
    expect(quantile([], 0.5)).toBeNaN();
    expect(summarize([3, 1, 2])).toEqual({ count: 3, p50Ms: 2, p99Ms: 3 });
  });

  it('a ratio needs both sides and a positive limit', () => {
    expect(ratio(50, 100)).toBe(0.5);
    expect(ratio(undefined, 100)).toBeUndefined();
    expect(ratio(50, 0)).toBeUndefined();
  });
});

describe('targets', () => {
  it('a ratio target passes at or above its minimum and misses below it', () => {
    const [pass] = checkTargets(
      [row({ ratio: 0.8 })],
      TARGETS.filter((t) => t.id === 'file:append-1'),
    );
    const [miss] = checkTargets(
      [row({ ratio: 0.79 })],
      TARGETS.filter((t) => t.id === 'file:append-1'),
    );
    expect(pass?.status).toBe('pass');
    expect(miss?.status).toBe('miss');
  });

  it('the index heap target reads the heap over an empty store', () => {
    const heap = TARGETS.filter((t) => t.id === 'file:index-heap');
    expect(checkTargets([row({ scenario: 'index-heap', heapGrowthMb: 99.9 })], heap)[0]).toMatchObject({ status: 'pass', measured: '+99.9 MB' });
    expect(checkTargets([row({ scenario: 'index-heap', heapGrowthMb: 100 })], heap)[0]?.status).toBe('miss');
  });

  it('a target with no row is n/a, never an exception', () => {
    expect(checkTargets([]).every((target) => target.status === 'n/a')).toBe(true);
  });

  it('being ahead of the peer is checked on every scenario both ran', () => {
    const rows = [
      row({ store: 'sqlite', rate: 200 }),
      row({ store: 'emmett-sqlite', rate: 100 }),
      row({ scenario: 'replay', store: 'sqlite', rate: 50 }),
      row({ scenario: 'replay', store: 'emmett-sqlite', rate: 100 }),
    ];
    const [result] = checkTargets(
      rows,
      TARGETS.filter((t) => t.id === 'sqlite:ahead-of:emmett-sqlite'),
    );
    expect(result).toMatchObject({ status: 'miss', measured: 'append-1 2.0×, replay 0.5×' });
  });
});

describe('command line', () => {
  it('defaults to the full run and understands --quick, --json and lists', () => {
    expect(parseArgs([]).mode).toBe('full');
    const options = parseArgs(['--quick', '--json', 'out.json', '--stores', 'memory,file', '--no-isolate']);
    expect(options).toMatchObject({ mode: 'quick', volumes: QUICK, json: 'out.json', stores: ['memory', 'file'], isolate: false });
    expect(() => parseArgs(['--fast'])).toThrow(/unknown argument --fast/);
  });
});

describe('a tiny run', () => {
  const missing: SubjectEntry = { name: 'not-yet', load: async () => ({ unavailable: 'n/a (not built)' }) };
  const memory = SUBJECTS.find((entry) => entry.name === 'memory') as SubjectEntry;

  it('measures every scenario on the memory store and reports a missing store as n/a', async () => {
    const report = await runBench({ mode: 'tiny', volumes: TINY, isolate: false, subjects: [memory, missing] });
    const stores = new Set(report.rows.map((r) => r.store));
    expect(stores).toEqual(new Set(['memory', 'not-yet']));
    for (const r of report.rows.filter((r) => r.store === 'not-yet')) expect(r).toMatchObject({ status: 'n/a', note: 'n/a (not built)' });

    const appends = report.rows.find((r) => r.store === 'memory' && r.scenario === 'append-1');
    expect(appends).toMatchObject({ status: 'ok', unit: 'events/s' });
    expect(appends?.rate).toBeGreaterThan(0);
    expect(appends?.rawRate).toBeGreaterThan(0);
    expect(appends?.ratio).toBeGreaterThan(0);
    expect(appends?.p99Ms).toBeGreaterThanOrEqual(appends?.p50Ms ?? Number.NaN);
    expect(report.rows.filter((r) => r.store === 'memory' && r.status === 'error')).toEqual([]);
    // The file store's own rows: n/a elsewhere, with the reason.
    expect(report.rows.filter((r) => r.store === 'memory' && (r.scenario === 'cleaning' || r.scenario === 'index-heap'))).toMatchObject([
      { scenario: 'cleaning', status: 'n/a', note: 'n/a (no log on disk to clean)' },
      { scenario: 'index-heap', status: 'n/a', note: 'n/a (nothing survives the process)' },
    ]);
    const replay = report.rows.find((r) => r.store === 'memory' && r.scenario === 'replay');
    expect(replay?.note).toBeUndefined();
    expect(typeof replay?.rssGrowthMb).toBe('number');

    expect(report.targets.map((t) => t.id)).toEqual(TARGETS.map((t) => t.id));
    const json = JSON.parse(JSON.stringify(report)) as typeof report;
    expect(Object.keys(json).sort()).toEqual(['durationMs', 'machine', 'mode', 'rows', 'startedAt', 'targets']);

    const table = formatRows(report.rows).split('\n');
    expect(table[0]).toMatch(new RegExp(COLUMNS.map((c) => `\\| ${c} +`).join('')));
    expect(table).toHaveLength(report.rows.length + 2);
    expect(formatReport(report)).toContain('ratio = rate / raw rate');
  });

  it('runs durable stores end to end and keeps every row in the table shape', async () => {
    const durable = SUBJECTS.filter((entry) => entry.name === 'file' || entry.name === 'sqlite');
    const report = await runBench({
      mode: 'tiny',
      volumes: TINY,
      isolate: false,
      subjects: durable,
      scenarios: ['append-1', 'append-64-one-stream', 'replay', 'service-round-trip', 'service-concurrent-transcript'],
    });
    expect(report.rows.map((r) => `${r.scenario}/${r.store}`)).toEqual([
      'append-1/file',
      'append-1/sqlite',
      'append-64-one-stream/file',
      'append-64-one-stream/sqlite',
      'replay/file',
      'replay/sqlite',
      'service-round-trip/file',
      'service-round-trip/sqlite',
      'service-concurrent-transcript/file',
      'service-concurrent-transcript/sqlite',
    ]);
    // Both durable stores can run every one of these scenarios: each row must be a measurement.
    expect(report.rows.filter((r) => r.status !== 'ok').map((r) => `${r.scenario}/${r.store}: ${r.note}`)).toEqual([]);
    for (const r of report.rows) {
      expect(r.rate).toBeGreaterThan(0);
      expect(r.ratio).toBeGreaterThan(0);
      expect(r.limit.length).toBeGreaterThan(0);
    }
  });
});

// The peer runs only where it is installed (npm run bench:peers) and a server is named; elsewhere one line says why.
const emmettPostgres = SUBJECTS.find((entry) => entry.name === 'emmett-postgresql') as SubjectEntry;
const emmettPostgresLoaded = await emmettPostgres.load();
const emmettPostgresSkipped = 'unavailable' in emmettPostgresLoaded ? emmettPostgresLoaded.unavailable : undefined;
if (emmettPostgresSkipped !== undefined) console.log(`bench: the emmett-postgresql tests are skipped: ${emmettPostgresSkipped}`);

describe.skipIf(emmettPostgresSkipped !== undefined)('the Emmett PostgreSQL peer', { tags: ['postgres'] }, () => {
  it('appends and reads through our port on a database of its own, dropped at the end', async () => {
    const report = await runBench({
      mode: 'tiny',
      volumes: TINY,
      isolate: false,
      subjects: [emmettPostgres],
      scenarios: ['append-1', 'append-64-one-stream', 'append-64-streams', 'append-100', 'replay'],
    });
    const status = Object.fromEntries(report.rows.map((r) => [r.scenario, r.status === 'ok' ? r.status : `${r.status}: ${r.note}`]));
    expect(status).toEqual({
      'append-1': 'ok',
      'append-64-one-stream': "n/a: n/a (concurrent appends to one stream fail even expecting 'any' (ExpectedVersionConflictError))",
      'append-64-streams': 'ok',
      'append-100': 'ok',
      replay: 'ok',
    });
    expect(report.rows.find((r) => r.scenario === 'replay')?.note).toBeUndefined();

    const client = new pg.Client({ connectionString: process.env['SESSIONFOLD_PG_URL'] });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT datname FROM pg_database WHERE datname LIKE 'sf\\_bench\\_emmett\\_%'");
      expect(rows).toEqual([]);
    } finally {
      await client.end();
    }
  });
});
