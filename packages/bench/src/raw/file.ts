import { closeSync, fdatasyncSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, writeFileSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { benchEvent, emptyRecord, foldData, journalLine } from '../fixtures.js';
import type { RawFamily, RawRead, RawWriter } from '../raw-limits.js';
import { RssTracker, timeSequential, type Timed } from '../stats.js';
import { readJournal } from './journal.js';

const NOW = new Date().toISOString();

/** Lines of `count` events, grouped `perWrite` to a Buffer, ready to write. */
function journalChunks(count: number, perWrite: number, firstPosition = 1): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < count; i += perWrite) {
    let text = '';
    for (let k = i; k < Math.min(count, i + perWrite); k++) text += journalLine(benchEvent(k), k + 1, firstPosition + k, NOW);
    chunks.push(Buffer.from(text));
  }
  return chunks;
}

/** Writes a whole journal of `count` events at `path`, durably (setup, untimed). */
function writeJournal(path: string, count: number, firstPosition = 1): void {
  const fd = openSync(path, 'w', 0o600);
  try {
    for (const chunk of journalChunks(count, 5_000, firstPosition)) writeSync(fd, chunk);
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Replaces `path` with `bytes` atomically: temp sibling, write, fsync, rename, fsync the directory. */
function atomicWrite(dir: string, name: string, bytes: string): void {
  const temp = join(dir, `.${name}.tmp`);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, join(dir, name));
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/** The file system's limits: `writeSync` of checksummed journal lines and `fdatasync`, chunked journal reads. */
export const rawFile: RawFamily = {
  name: 'file',
  describe: {
    appendBatches: 'writeSync of the batch’s journal lines + fdatasyncSync, one file',
    appendSpread: 'one line written to each of the files, then all fdatasync’d in parallel',
    replay: '1 MiB chunked read, split on \\n, sha256 verify, JSON.parse, fold',
    readAll: 'chunked read + verify + parse of every journal',
    compact: 'chunked read + fold, atomic snapshot write, empty journal swapped in atomically',
    coldOpen: 'readdir + chunked read + verify + parse of every journal',
  },

  async appendBatches(dir, batchSize, writes): Promise<RawWriter> {
    const chunks = journalChunks(batchSize * writes, batchSize);
    const fd = openSync(join(dir, 'raw-append.jsonl'), 'a', 0o600);
    return {
      write(i) {
        writeSync(fd, chunks[i % chunks.length] as Buffer);
        fdatasyncSync(fd);
      },
      close: async () => closeSync(fd),
    };
  },

  async newStreamWrites(dir, writesPerStream): Promise<RawWriter> {
    const root = join(dir, 'raw-new-streams');
    mkdirSync(root, { recursive: true });
    const lines = journalChunks(writesPerStream, 1);
    const dirFd = openSync(root, 'r');
    return {
      write(i) {
        const fd = openSync(join(root, `s${i}.jsonl`), 'wx', 0o600);
        try {
          lines.forEach((line, k) => {
            writeSync(fd, line);
            fdatasyncSync(fd);
            if (k === 0) fsyncSync(dirFd);
          });
        } finally {
          closeSync(fd);
        }
      },
      close: async () => closeSync(dirFd),
    };
  },

  async appendSpread(dir, streams, writes): Promise<RawWriter> {
    const lines = journalChunks(writes, 1);
    const handles = await Promise.all(Array.from({ length: streams }, (_, s) => open(join(dir, `raw-spread-${s}.jsonl`), 'a', 0o600)));
    return {
      async write(i) {
        const line = lines[i % lines.length] as Buffer;
        await Promise.all(handles.map((handle) => handle.write(line)));
        await Promise.all(handles.map((handle) => handle.datasync()));
      },
      close: async () => {
        await Promise.all(handles.map((handle) => handle.close()));
      },
    };
  },

  async replay(dir, events) {
    const path = join(dir, 'raw-replay.jsonl');
    writeJournal(path, events);
    return async (): Promise<RawRead> => {
      const rss = new RssTracker();
      const record = emptyRecord();
      const start = performance.now();
      let n = 0;
      const count = readJournal(path, (line) => {
        foldData(record, line.data, line.revision);
        if (++n % 4096 === 0) rss.sample();
      });
      const ms = performance.now() - start;
      rss.sample();
      return { events: count, ms, rssGrowthMb: rss.growthMb };
    };
  },

  async readAll(dir, events, streams) {
    const root = join(dir, 'raw-all');
    mkdirSync(root, { recursive: true });
    const per = Math.ceil(events / streams);
    for (let s = 0; s < streams; s++) writeJournal(join(root, `s${s}.jsonl`), per, s * per + 1);
    return async (): Promise<RawRead> => {
      const rss = new RssTracker();
      const record = emptyRecord();
      const start = performance.now();
      let count = 0;
      for (const name of readdirSync(root)) {
        count += readJournal(join(root, name), (line) => foldData(record, line.data, line.revision));
        rss.sample();
      }
      return { events: count, ms: performance.now() - start, rssGrowthMb: rss.growthMb };
    };
  },

  async compact(dir, events): Promise<Timed> {
    const root = join(dir, 'raw-compact');
    mkdirSync(root, { recursive: true });
    writeJournal(join(root, 's.jsonl'), events);
    return timeSequential(1, () => {
      const record = emptyRecord();
      readJournal(join(root, 's.jsonl'), (line) => foldData(record, line.data, line.revision));
      atomicWrite(root, 's.snapshot.json', JSON.stringify({ version: 1, identity: { stream: 's', schemaVersion: 1 }, revision: events, state: record }));
      atomicWrite(root, 's.jsonl', '');
    });
  },

  async coldOpen(dir, sessions, eventsPerSession): Promise<Timed> {
    const root = join(dir, 'raw-cold');
    mkdirSync(root, { recursive: true });
    for (let s = 0; s < sessions; s++) writeFileSync(join(root, `s${s}.jsonl`), journalChunks(eventsPerSession, eventsPerSession)[0] ?? '');
    return timeSequential(1, () => {
      const record = emptyRecord();
      for (const name of readdirSync(root)) readJournal(join(root, name), (line) => foldData(record, line.data, line.revision));
    });
  },
};
