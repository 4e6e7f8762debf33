import { closeSync, fdatasyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { benchEvent, emptyRecord, foldData, logLine } from '../fixtures.js';
import type { RawCopy, RawFamily, RawRead, RawWriter } from '../raw-limits.js';
import { RssTracker, timeSequential, type Timed } from '../stats.js';
import { readLog } from './journal.js';

const NOW = new Date().toISOString();
/** Where a log starts its next segment: the store's size, so a long read crosses segments as the store's does. */
const SEGMENT_BYTES = 64 * 1024 * 1024;
/** The one stream of the single-stream limits. */
const STREAM = 's';

/** A segment's name: the position of its first line, zero-padded to 20 digits, as the store names them. */
const segmentName = (position: number) => `${String(position).padStart(20, '0')}.jsonl`;

/**
 * Lines of `count` events of one stream, grouped `perWrite` to a Buffer, ready to write: a group is one batch
 * (`more` on all but its last line), its events at revisions and positions from 1.
 */
function batchChunks(count: number, perWrite: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < count; i += perWrite) {
    const end = Math.min(count, i + perWrite);
    let text = '';
    for (let k = i; k < end; k++) text += logLine(STREAM, benchEvent(k), k + 1, k + 1, NOW, k < end - 1);
    chunks.push(Buffer.from(text));
  }
  return chunks;
}

/**
 * Writes a log of `count` lines, line `k` at position k + 1 from `lineOf`, as segments of `root/log/`, durably
 * (setup, untimed). Returns the path of its last segment.
 */
function writeLog(root: string, count: number, lineOf: (k: number) => string): string {
  const log = join(root, 'log');
  mkdirSync(log, { recursive: true });
  let fd: number | undefined;
  let path = '';
  let size = 0;
  let text = '';
  const flush = () => {
    if (fd !== undefined && text !== '') writeSync(fd, text);
    text = '';
  };
  const seal = () => {
    flush();
    if (fd === undefined) return;
    fdatasyncSync(fd);
    closeSync(fd);
  };
  for (let k = 0; k < count; k++) {
    if (fd === undefined || size >= SEGMENT_BYTES) {
      seal();
      path = join(log, segmentName(k + 1));
      fd = openSync(path, 'w', 0o600);
      size = 0;
    }
    const line = lineOf(k);
    text += line;
    size += Buffer.byteLength(line);
    if (text.length >= 1 << 20) flush();
  }
  seal();
  return path;
}

/** A chunked read of the log under `root`, folding every event; samples RSS as it goes. */
function readAndFold(root: string): RawRead {
  const rss = new RssTracker();
  const record = emptyRecord();
  const start = performance.now();
  let n = 0;
  const count = readLog(join(root, 'log'), (line) => {
    foldData(record, line.data, line.revision);
    if (++n % 4096 === 0) rss.sample();
  });
  const ms = performance.now() - start;
  rss.sample();
  return { events: count, ms, rssGrowthMb: rss.growthMb };
}

/**
 * The file system's limits for the file store's one log: `writeSync` of pre-framed lines and one `fdatasync` to
 * one file, whichever streams the lines belong to; chunked reads of its segments.
 */
export const rawFile: RawFamily = {
  name: 'file',
  describe: {
    appendBatches: 'writeSync of the batch’s pre-framed log lines + fdatasyncSync, one file',
    appendSpread: 'one writeSync of a line for each stream + one fdatasyncSync, one file (the log they share)',
    replay: '1 MiB chunked read of the log’s segments, split on \\n, sha256 verify, JSON.parse, fold',
    readAll: 'the same chunked read + verify + parse of the log’s segments, every stream’s lines',
    compact: 'chunked read + fold of the log, one $snapshot line appended + fdatasyncSync',
    coldOpen: 'readdir + chunked read + verify + parse of the log’s segments',
  },

  async appendBatches(dir, batchSize, writes): Promise<RawWriter> {
    const chunks = batchChunks(batchSize * writes, batchSize);
    mkdirSync(join(dir, 'log'), { recursive: true });
    const fd = openSync(join(dir, 'log', segmentName(1)), 'a', 0o600);
    return {
      write(i) {
        writeSync(fd, chunks[i % chunks.length] as Buffer);
        fdatasyncSync(fd);
      },
      close: async () => closeSync(fd),
    };
  },

  // A new stream is lines in the log, like any other: no file of its own, so no new-stream floor.

  async appendSpread(dir, streams, writes): Promise<RawWriter> {
    const chunks: Buffer[] = [];
    for (let i = 0; i < writes; i++) {
      let text = '';
      for (let s = 0; s < streams; s++) text += logLine(`s-${s}`, benchEvent(i), i + 1, i * streams + s + 1, NOW);
      chunks.push(Buffer.from(text));
    }
    mkdirSync(join(dir, 'log'), { recursive: true });
    const fd = openSync(join(dir, 'log', segmentName(1)), 'a', 0o600);
    return {
      write(i) {
        writeSync(fd, chunks[i % chunks.length] as Buffer);
        fdatasyncSync(fd);
      },
      close: async () => closeSync(fd),
    };
  },

  async replay(dir, events) {
    const root = join(dir, 'raw-replay');
    writeLog(root, events, (k) => logLine(STREAM, benchEvent(k), k + 1, k + 1, NOW));
    return async () => readAndFold(root);
  },

  async readAll(dir, events, streams) {
    const root = join(dir, 'raw-all');
    const per = Math.ceil(events / streams);
    writeLog(root, per * streams, (k) => logLine(`all-${Math.floor(k / per)}`, benchEvent(k), (k % per) + 1, k + 1, NOW));
    return async () => readAndFold(root);
  },

  async compact(dir, events): Promise<Timed> {
    const root = join(dir, 'raw-compact');
    const last = writeLog(root, events, (k) => logLine(STREAM, benchEvent(k), k + 1, k + 1, NOW));
    return timeSequential(1, () => {
      const record = emptyRecord();
      readLog(join(root, 'log'), (line) => foldData(record, line.data, line.revision));
      const snapshot = { revision: events, state: { ...record }, identity: { stream: STREAM, schemaVersion: 1 } };
      const fd = openSync(last, 'a');
      try {
        writeSync(fd, logLine(STREAM, { type: '$snapshot', data: snapshot }, events, events + 1, NOW));
        fdatasyncSync(fd);
      } finally {
        closeSync(fd);
      }
    });
  },

  async cleanSegments(dir, segments, perStream, keepEvery): Promise<RawCopy> {
    const log = join(dir, 'raw-clean', 'log');
    mkdirSync(log, { recursive: true });
    // Each segment: whole streams, one batch of `perStream` lines each, until it holds SEGMENT_BYTES; the byte
    // ranges of the live streams are noted as the store's index knows them.
    const sealed: Array<{ path: string; live: Array<[offset: number, bytes: number]> }> = [];
    let position = 1;
    let stream = 0;
    for (let n = 0; n < segments; n++) {
      const path = join(log, segmentName(position));
      const fd = openSync(path, 'w', 0o600);
      const live: Array<[number, number]> = [];
      let size = 0;
      try {
        while (size < SEGMENT_BYTES) {
          let text = '';
          for (let k = 0; k < perStream; k++) text += logLine(`c-${stream}`, benchEvent(k), k + 1, position++, NOW, k < perStream - 1);
          const bytes = Buffer.from(text);
          writeSync(fd, bytes);
          if (stream % keepEvery === 0) live.push([size, bytes.length]);
          size += bytes.length;
          stream++;
        }
        fdatasyncSync(fd);
      } finally {
        closeSync(fd);
      }
      sealed.push({ path, live });
    }
    let copied = 0;
    const start = performance.now();
    for (const { path, live } of sealed) {
      const bytes = readFileSync(path);
      const kept = Buffer.concat(live.map(([offset, length]) => bytes.subarray(offset, offset + length)));
      const temp = `${path}.clean.tmp`;
      const fd = openSync(temp, 'w', 0o600);
      try {
        writeSync(fd, kept);
        fdatasyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, path);
      copied += kept.length;
    }
    return { bytes: copied, ms: performance.now() - start };
  },

  async coldOpen(dir, sessions, eventsPerSession): Promise<Timed> {
    const root = join(dir, 'raw-cold');
    writeLog(root, sessions * eventsPerSession, (k) => logLine(`s${Math.floor(k / eventsPerSession)}`, benchEvent(k), (k % eventsPerSession) + 1, k + 1, NOW));
    return timeSequential(1, () => {
      const record = emptyRecord();
      readLog(join(root, 'log'), (line) => foldData(record, line.data, line.revision));
    });
  },
};
