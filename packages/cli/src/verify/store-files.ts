import * as crypto from 'node:crypto';
import { closeSync, lstatSync, readSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError } from '../exit-codes.js';
import { kindOf, openRegularFile, openRegularFileSync } from '../files.js';
import type { Progress } from '../progress.js';
import type { Findings } from './problems.js';

// Reading a file store's files without the store's code: shared by the scan of every layout.

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
export interface FramedLine {
  line: number;
  payload: unknown;
}

/** Names a path relative to the store's directory, as every problem is reported. */
export type Namer = (path: string) => string;

/** Whether anything (a dangling link too) is at `path`: it is then read, or refused by name. */
export const present = (path: string): boolean => lstatSync(path, { throwIfNoEntry: false }) !== undefined;

/**
 * The regular files of one of the store's directories. A store writes only regular files there: a link (which
 * could lead out of the store), a FIFO, a socket or a device is an error naming it, and is never opened.
 */
export async function listFiles(directory: string, name: Namer, findings: Findings): Promise<string[]> {
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
 * a file of any size is checked in bounded memory, each line hashed and parsed where it lies. A bad line is an
 * error and ends the file (what follows it cannot be trusted to be in order); bytes after the last newline are a
 * torn tail: a warning, or an error where `sealed` (no writer appends to the file, so none cuts it).
 * Resolves false when a damaged line, a sealed file's tail, or `onLine` stopped the scan before the file's end.
 */
export async function forEachFramedLine(
  path: string,
  file: string,
  findings: Findings,
  onLine: (line: FramedLine) => boolean | undefined,
  sealed = false,
): Promise<boolean> {
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
      const nul = buffer.subarray(0, filled).every((byte) => byte === 0);
      if (sealed) {
        findings.error(
          file,
          line + 1,
          `${nul ? 'NUL bytes after the last record' : 'an unfinished last line'} of a sealed segment: only the last segment's tail is cut by a writer`,
        );
        return false;
      }
      findings.warning(
        file,
        line + 1,
        nul ? 'NUL bytes after the last record (a torn tail; a writer cuts it on open)' : 'an unfinished last line (a torn tail; a writer cuts it on open)',
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
export async function framedLines(path: string, file: string, findings: Findings): Promise<FramedLine[]> {
  const lines: FramedLine[] = [];
  await forEachFramedLine(path, file, findings, (line) => void lines.push(line));
  return lines;
}

/** Checks each blob file's bytes against its name (files not named by a sha256 are left alone). */
export async function checkBlobBytes(blobsDir: string, blobNames: Iterable<string>, name: Namer, findings: Findings, bar: Progress): Promise<void> {
  for (const sha of blobNames) {
    const path = join(blobsDir, sha);
    const actual = await hashFile(path, name(path), findings);
    findings.blobs++;
    if (actual !== undefined && actual !== sha) findings.error(name(path), undefined, `the blob's bytes hash to ${actual}, not to its name`);
    bar.tick();
  }
}

/** The blob files named by a sha256 among a listing of the blobs directory. */
export const blobNamesOf = (files: readonly string[]): Set<string> => new Set(files.filter((entry) => /^[0-9a-f]{64}$/.test(entry)));

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
