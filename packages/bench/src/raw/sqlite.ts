import { join } from 'node:path';
import Database from 'better-sqlite3';
import { benchEvent, emptyRecord, foldData, rowJson } from '../fixtures.js';
import type { RawFamily, RawRead, RawWriter } from '../raw-limits.js';
import { RssTracker, timeSequential, type Timed } from '../stats.js';

/** The pragmas the SQLite store runs under by default; the raw limit uses the same. */
export const SQLITE_PRAGMAS = ['journal_mode = WAL', 'synchronous = FULL'] as const;

type Db = Database.Database;
const NOW = new Date().toISOString();

/** A fresh database with one events table shaped like an event store's. */
function openDb(path: string): Db {
  const db = new Database(path);
  for (const pragma of SQLITE_PRAGMAS) db.pragma(pragma);
  db.exec(`CREATE TABLE IF NOT EXISTS events (
    position INTEGER PRIMARY KEY, stream TEXT NOT NULL, revision INTEGER NOT NULL,
    type TEXT NOT NULL, data TEXT NOT NULL, recorded_at TEXT NOT NULL, UNIQUE (stream, revision))`);
  db.exec('CREATE TABLE IF NOT EXISTS snapshots (stream TEXT PRIMARY KEY, revision INTEGER NOT NULL, state TEXT NOT NULL)');
  return db;
}

/** Returns a function that inserts rows [from, from+count) of `stream` in one transaction. */
function inserter(db: Db): (stream: string, from: number, count: number) => void {
  const insert = db.prepare('INSERT INTO events (stream, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)');
  return db.transaction((stream: string, from: number, count: number) => {
    for (let k = from; k < from + count; k++) {
      const event = benchEvent(k);
      insert.run(stream, k + 1, event.type, rowJson(event), NOW);
    }
  });
}

/** Fills `stream` with `count` rows in large transactions (setup, untimed). */
function fill(db: Db, stream: string, count: number): void {
  const insert = inserter(db);
  for (let i = 0; i < count; i += 10_000) insert(stream, i, Math.min(10_000, count - i));
}

/** better-sqlite3 directly: prepared inserts in transactions; reads iterate rows as arrays (`.raw()`) + `JSON.parse`. */
export const rawSqlite: RawFamily = {
  name: 'sqlite',
  describe: {
    appendBatches: 'better-sqlite3: the batch’s rows in one transaction (WAL, synchronous=FULL)',
    appendSpread: 'better-sqlite3: one row per stream, all in one transaction',
    replay: 'stmt.raw().iterate over the stream’s rows + JSON.parse + fold',
    readAll: 'stmt.raw().iterate over all rows (all columns) in position order + JSON.parse',
    compact: 'one transaction: iterate + fold, insert snapshot row, delete the events',
    coldOpen: 'open the database, iterate + parse every row',
  },

  async appendBatches(dir, batchSize): Promise<RawWriter> {
    const db = openDb(join(dir, 'raw-append.sqlite'));
    const insert = inserter(db);
    return { write: (i) => insert('raw', i * batchSize, batchSize), close: async () => void db.close() };
  },

  async appendSpread(dir, streams): Promise<RawWriter> {
    const db = openDb(join(dir, 'raw-spread.sqlite'));
    const insert = db.prepare('INSERT INTO events (stream, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)');
    const round = db.transaction((r: number) => {
      for (let s = 0; s < streams; s++) {
        const event = benchEvent(r);
        insert.run(`raw-${s}`, r + 1, event.type, rowJson(event), NOW);
      }
    });
    return { write: (r) => void round(r), close: async () => void db.close() };
  },

  async replay(dir, events) {
    const path = join(dir, 'raw-replay.sqlite');
    const setup = openDb(path);
    fill(setup, 'raw', events);
    setup.close();
    return async (): Promise<RawRead> => {
      // Opened before the clock starts, as the stores are: reads measure reading; opening is `cold-open`'s.
      const db = openDb(path);
      const rss = new RssTracker();
      const start = performance.now();
      const record = emptyRecord();
      let n = 0;
      const rows = db.prepare('SELECT revision, data FROM events WHERE stream = ? ORDER BY revision').raw().iterate('raw');
      for (const [revision, data] of rows as Iterable<[number, string]>) {
        foldData(record, JSON.parse(data), revision);
        if (++n % 4096 === 0) rss.sample();
      }
      const ms = performance.now() - start;
      db.close();
      return { events: n, ms, rssGrowthMb: rss.growthMb };
    };
  },

  async readAll(dir, events, streams) {
    const path = join(dir, 'raw-all.sqlite');
    const setup = openDb(path);
    const insert = inserter(setup);
    const per = Math.ceil(events / streams);
    setup.transaction(() => {
      for (let s = 0; s < streams; s++) insert(`s${s}`, 0, per);
    })();
    setup.close();
    return async (): Promise<RawRead> => {
      // Opened before the clock starts, as the stores are: reads measure reading; opening is `cold-open`'s.
      const db = openDb(path);
      const rss = new RssTracker();
      const start = performance.now();
      const record = emptyRecord();
      let n = 0;
      const rows = db.prepare('SELECT position, stream, revision, type, data, recorded_at FROM events ORDER BY position').raw().iterate();
      for (const row of rows as Iterable<[number, string, number, string, string, string]>) {
        foldData(record, JSON.parse(row[4]), row[2]);
        if (++n % 4096 === 0) rss.sample();
      }
      const ms = performance.now() - start;
      db.close();
      return { events: n, ms, rssGrowthMb: rss.growthMb };
    };
  },

  async compact(dir, events): Promise<Timed> {
    const db = openDb(join(dir, 'raw-compact.sqlite'));
    try {
      fill(db, 's', events);
      const select = db.prepare('SELECT revision, data FROM events WHERE stream = ? ORDER BY revision');
      const snapshot = db.prepare('INSERT OR REPLACE INTO snapshots (stream, revision, state) VALUES (?, ?, ?)');
      const drop = db.prepare('DELETE FROM events WHERE stream = ? AND revision <= ?');
      const compact = db.transaction(() => {
        const record = emptyRecord();
        for (const [revision, data] of select.raw().iterate('s') as Iterable<[number, string]>) foldData(record, JSON.parse(data), revision);
        snapshot.run('s', record.lastRevision, JSON.stringify(record));
        drop.run('s', record.lastRevision);
      });
      return await timeSequential(1, () => compact());
    } finally {
      db.close();
    }
  },

  async coldOpen(dir, sessions, eventsPerSession): Promise<Timed> {
    const path = join(dir, 'raw-cold.sqlite');
    const setup = openDb(path);
    const insert = inserter(setup);
    setup.transaction(() => {
      for (let s = 0; s < sessions; s++) insert(`s${s}`, 0, eventsPerSession);
    })();
    setup.close();
    return timeSequential(1, () => {
      const db = openDb(path);
      const record = emptyRecord();
      const rows = db.prepare('SELECT revision, data FROM events ORDER BY stream, revision').raw().iterate();
      for (const [revision, data] of rows as Iterable<[number, string]>) {
        foldData(record, JSON.parse(data), revision);
      }
      db.close();
    });
  },
};
