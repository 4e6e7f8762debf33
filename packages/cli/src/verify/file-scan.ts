import * as crypto from 'node:crypto';
import { closeSync, lstatSync, readSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { CliError } from '../exit-codes.js';
import { kindOf, openRegularFile, openRegularFileSync } from '../files.js';
import type { Progress } from '../progress.js';
import type { Findings } from './problems.js';
import { PositionBits } from './position-bits.js';

/** Bytes read from a file at a time: large sequential reads, and a buffer reused for the whole scan. */
const READ_BYTES = 1 << 20;
/**
 * The scan's buffer, shared by every file: a store has thousands of small journals, and a fresh megabyte for each
 * cost more in allocation and garbage collection than reading them. A file is read without an await in between,
 * so no two reads ever share it at once.
 */
let shared = Buffer.allocUnsafe(0);
const HASH_HEX = 64;
const SPACE = 0x20;
const NEWLINE = 0x0a;
const sha256Hex: (data: Uint8Array) => string =
  typeof crypto.hash === 'function' ? (data) => crypto.hash('sha256', data, 'hex') : (data) => crypto.createHash('sha256').update(data).digest('hex');

/** One complete framed line of a journal-like file. */
interface FramedLine {
  line: number;
  payload: unknown;
}

/**
 * Checks every file of a file store as it lies on disk, without the store's code: the framing and checksum
 * of every line, revision and position order in each journal, snapshot identities, owner records against
 * blob files, and each blob's bytes against its name. Every problem is named by file and 1-based line;
 * an unfinished last line (which the next writer cuts) is a warning.
 */
export async function scanFileStore(directory: string, findings: Findings, bar: Progress): Promise<void> {
  const name = (path: string) => relative(directory, path) || path;
  const streamsDir = join(directory, 'streams');
  const ownersDir = join(directory, 'owners');
  const blobsDir = join(directory, 'blobs');
  const streamFiles = await listFiles(streamsDir, name, findings);
  const ownerFiles = await listFiles(ownersDir, name, findings);
  const blobFiles = await listFiles(blobsDir, name, findings);
  bar.total(streamFiles.length + ownerFiles.length + blobFiles.length + 2);

  const formatPath = join(directory, 'format.json');
  if (present(formatPath)) await framedLines(formatPath, name(formatPath), findings);
  const tombstones = join(directory, 'tombstones.jsonl');
  if (present(tombstones)) await framedLines(tombstones, name(tombstones), findings);
  bar.tick(2);

  const positions = new PositionBits();
  const snapshotRevisions = new Map<string, number>();
  for (const file of streamFiles.filter((entry) => entry.endsWith('.snapshot.json'))) {
    const path = join(streamsDir, file);
    const stream = file.slice(0, -'.snapshot.json'.length);
    const lines = await framedLines(path, name(path), findings);
    const envelope = lines[0]?.payload as { identity?: { stream?: unknown }; revision?: unknown } | undefined;
    if (envelope !== undefined) {
      if (envelope.identity?.stream !== stream)
        findings.error(name(path), 1, `the snapshot's identity names stream ${JSON.stringify(envelope.identity?.stream)}, not ${stream}`);
      if (typeof envelope.revision === 'number') snapshotRevisions.set(stream, envelope.revision);
    }
    bar.tick();
  }
  for (const file of streamFiles.filter((entry) => entry.endsWith('.jsonl'))) {
    const path = join(streamsDir, file);
    const stream = file.slice(0, -'.jsonl'.length);
    findings.streams++;
    await checkJournal(path, name(path), stream, snapshotRevisions.get(stream) ?? 0, positions, findings);
    bar.tick();
  }

  const blobNames = new Set(blobFiles.filter((entry) => /^[0-9a-f]{64}$/.test(entry)));
  for (const file of ownerFiles.filter((entry) => entry.endsWith('.jsonl'))) {
    const path = join(ownersDir, file);
    for (const { line, payload } of await framedLines(path, name(path), findings)) {
      const sha = (payload as { sha256?: unknown }).sha256;
      if (typeof sha !== 'string') findings.error(name(path), line, 'an owner record without a sha256');
      else if (!blobNames.has(sha)) findings.error(name(path), line, `the stream owns blob ${sha}, but ${name(join(blobsDir, sha))} is missing`);
    }
    bar.tick();
  }
  for (const sha of blobNames) {
    const path = join(blobsDir, sha);
    const actual = await hashFile(path, name(path), findings);
    findings.blobs++;
    if (actual !== undefined && actual !== sha) findings.error(name(path), undefined, `the blob's bytes hash to ${actual}, not to its name`);
    bar.tick();
  }
}

/** Whether anything (a dangling link too) is at `path`: it is then read, or refused by name. */
const present = (path: string) => lstatSync(path, { throwIfNoEntry: false }) !== undefined;

/**
 * The regular files of one of the store's directories. A store writes only regular files there: a link (which
 * could lead out of the store), a FIFO, a socket or a device is an error naming it, and is never opened.
 */
async function listFiles(directory: string, name: (path: string) => string, findings: Findings): Promise<string[]> {
  const stats = lstatSync(directory, { throwIfNoEntry: false });
  if (!stats) return [];
  if (!stats.isDirectory()) {
    findings.error(name(directory), undefined, `${kindOf(stats)}, not a directory: a store keeps only its own directories here; it was not read`);
    findings.notRegular++;
    return [];
  }
  const files: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    if (entry.isFile()) files.push(entry.name);
    else if (!entry.isDirectory()) {
      const kind = kindOf(lstatSync(join(directory, entry.name)));
      findings.error(name(join(directory, entry.name)), undefined, `${kind}, not a regular file: a store writes only regular files; it was not read`);
      findings.notRegular++;
    }
  }
  return files.sort();
}

/** A file that may not be read (not a regular file, or unreadable) becomes an error on it, and the scan goes on. */
function refusedFile(error: unknown, file: string, findings: Findings): void {
  if (!(error instanceof CliError)) throw error;
  findings.error(file, undefined, error.message);
  findings.notRegular++;
}

/**
 * Calls `onLine` with each complete, intact line of a framed file, read in large chunks into one buffer so that
 * a journal of any size is checked in bounded memory, each line hashed and parsed where it lies. A bad line is
 * an error and ends the file (what follows it cannot be trusted to be in order); bytes after the last newline
 * are a torn tail: a warning.
 */
/** Resolves false when a damaged line, or `onLine`, stopped the scan before the file's end. */
async function forEachFramedLine(path: string, file: string, findings: Findings, onLine: (line: FramedLine) => boolean | undefined): Promise<boolean> {
  findings.files++;
  // Synchronous reads: verify does nothing else meanwhile, and a read that waits for the thread pool left the
  // process idle for a tenth of a scan of many small journals.
  let fd: number;
  try {
    fd = openRegularFileSync(path, 'store file');
  } catch (error) {
    refusedFile(error, file, findings);
    return false;
  }
  try {
    if (shared.length < READ_BYTES) shared = Buffer.allocUnsafe(READ_BYTES);
    let buffer = shared;
    let filled = 0;
    let line = 0;
    for (;;) {
      // A line longer than the buffer: grow it, so the line is still checked whole.
      if (filled === buffer.length) buffer = shared = Buffer.concat([buffer, Buffer.allocUnsafe(buffer.length)]);
      const bytesRead = readSync(fd, buffer, filled, buffer.length - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
      const view = buffer.subarray(0, filled);
      let start = 0;
      for (let end = view.indexOf(NEWLINE, start); end >= 0; end = view.indexOf(NEWLINE, start)) {
        line++;
        const payload = checkLine(buffer, start, end, file, line, findings);
        start = end + 1;
        if (payload === undefined || onLine({ line, payload: payload.value }) === false) return false;
      }
      buffer.copyWithin(0, start, filled);
      filled -= start;
    }
    if (filled > 0) {
      const tail = buffer.subarray(0, filled);
      findings.warning(
        file,
        line + 1,
        tail.every((byte) => byte === 0)
          ? 'NUL bytes after the last record (a torn tail; a writer cuts it on open)'
          : 'an unfinished last line (a torn tail; a writer cuts it on open)',
      );
    }
    return true;
  } finally {
    closeSync(fd);
  }
}

/** The payload of the line `buffer[start, end)`, or undefined (an error recorded) when the line is damaged. */
function checkLine(buffer: Buffer, start: number, end: number, file: string, line: number, findings: Findings): { value: unknown } | undefined {
  findings.records++;
  if (end - start < HASH_HEX + 1 || buffer[start + HASH_HEX] !== SPACE) {
    findings.error(file, line, 'not a framed record (`sha256 payload`)');
    return undefined;
  }
  if (sha256Hex(buffer.subarray(start + HASH_HEX + 1, end)) !== buffer.toString('latin1', start, start + HASH_HEX)) {
    findings.error(file, line, 'checksum mismatch: the record was changed after it was written');
    return undefined;
  }
  try {
    return { value: JSON.parse(buffer.toString('utf8', start + HASH_HEX + 1, end)) as unknown };
  } catch {
    findings.error(file, line, 'the record is not valid JSON');
    return undefined;
  }
}

/** Every intact line of a small framed file (a snapshot, format.json, an owners file). */
async function framedLines(path: string, file: string, findings: Findings): Promise<FramedLine[]> {
  const lines: FramedLine[] = [];
  await forEachFramedLine(path, file, findings, (line) => void lines.push(line));
  return lines;
}

/**
 * Checks a journal's records: revisions gap-free after the snapshot's, positions increasing and used nowhere
 * else in the store, batches finished.
 */
async function checkJournal(path: string, file: string, stream: string, snapshotRevision: number, positions: PositionBits, findings: Findings): Promise<void> {
  let revision: number | undefined;
  let position = 0;
  let openBatch: number | undefined;
  let failed = false;
  const whole = await forEachFramedLine(path, file, findings, ({ line, payload }) => {
    const event = payload as { stream?: unknown; revision?: unknown; position?: unknown; more?: unknown };
    if (typeof event.revision !== 'number' || typeof event.position !== 'number') {
      findings.error(file, line, 'an event without a revision or position');
      failed = true;
      return false;
    }
    // Checked before its position is claimed: a line copied from another journal is the copy's error, and leaves
    // the original's position to it. (Lines of early releases carry no stream name.)
    if (event.stream !== undefined && event.stream !== stream) {
      findings.error(file, line, `the line names stream ${JSON.stringify(event.stream)}: it belongs to another journal`);
      failed = true;
      return false;
    }
    if (!positions.claim(event.position)) {
      findings.error(file, line, `position ${event.position} is also used elsewhere in the store: a line or journal was copied or moved`);
      failed = true;
      return false;
    }
    // Events a snapshot covers may remain after a crash between writing the snapshot and rewriting the journal.
    if (event.revision <= snapshotRevision && revision === undefined) {
      position = Math.max(position, event.position);
      return true;
    }
    const expected = (revision ?? snapshotRevision) + 1;
    if (event.revision !== expected) {
      findings.error(file, line, `revision ${event.revision} where revision ${expected} was expected (a line moved, removed or duplicated)`);
      failed = true;
      return false;
    }
    if (event.position <= position) {
      findings.error(file, line, `position ${event.position} does not follow position ${position} (a line moved or duplicated)`);
      failed = true;
      return false;
    }
    revision = event.revision;
    position = event.position;
    openBatch = event.more === true ? (openBatch ?? line) : undefined;
    return true;
  });
  // A batch left open by a line the scan stopped at is that line's damage, not a torn tail.
  if (whole && !failed && openBatch !== undefined)
    findings.warning(file, openBatch, 'a batch whose last record never made it (a torn tail; a writer drops it on open)');
}

/** The sha256 of a blob file's bytes; undefined (an error recorded) when it is not a regular file. */
async function hashFile(path: string, file: string, findings: Findings): Promise<string | undefined> {
  let handle;
  try {
    handle = await openRegularFile(path, 'blob');
  } catch (error) {
    refusedFile(error, file, findings);
    return undefined;
  }
  const hash = crypto.createHash('sha256');
  for await (const chunk of handle.createReadStream()) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
