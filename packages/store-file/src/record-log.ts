import { CorruptionError, StorageError } from '@sessionfold/core/kernel';
import { dirname } from 'node:path';
import { errorCode, fullDiskReason, readingFile, syncDir, writeAll, type FileSystem } from './fs-layer.js';
import { frameLine, isLineMissingItsNewline } from './journal-codec.js';
import { LineReader } from './journal-reader.js';

/** A record of a small log with its 1-based line number. */
export interface LogRecord {
  value: unknown;
  line: number;
}

/**
 * Reads a small checksummed log (tombstones, blob owners) whole, with the journals' framing and torn-tail
 * rule: a last line without a newline is cut off (and fsynced) when `repair` is set. Undefined if absent.
 */
export function readRecordLog(fsl: FileSystem, path: string, repair: boolean): Promise<{ records: LogRecord[]; log: RecordLog } | undefined> {
  return readingFile(path, () => readWhole(fsl, path, repair));
}

async function readWhole(fsl: FileSystem, path: string, repair: boolean): Promise<{ records: LogRecord[]; log: RecordLog } | undefined> {
  let fd: number;
  try {
    fd = await fsl.open(path, 'r');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  const records: LogRecord[] = [];
  let length = 0;
  let size: number;
  try {
    size = (await fsl.fstat(fd)).size;
    const reader = new LineReader(fsl, fd, path, 0, size, 1, 64 * 1024);
    for (let lines = await reader.next(); lines; lines = await reader.next()) {
      for (const line of lines) {
        records.push({ value: line.value, line: line.no });
        length = line.next;
      }
    }
    if (isLineMissingItsNewline(reader.tail)) throw new CorruptionError(path, records.length + 1, 'a complete record lost its newline');
  } finally {
    await fsl.close(fd);
  }
  if (size > length && repair) {
    const wfd = await fsl.open(path, 'r+');
    try {
      await fsl.ftruncate(wfd, length);
      await fsl.fsync(wfd);
    } finally {
      await fsl.close(wfd);
    }
  }
  return { records, log: new RecordLog(fsl, path, length, true) };
}

/**
 * Appends framed records to a small log, one at a time, each fdatasynced before it resolves. A failed write
 * is cut back before the next one; a failed fdatasync throws a poisoned `StorageError`.
 */
export class RecordLog {
  readonly #fs: FileSystem;
  readonly path: string;
  #length: number;
  #exists: boolean;
  #dirty = false;
  /** Created but its directory entry not yet fsynced. */
  #unsyncedName = false;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(fsl: FileSystem, path: string, length = 0, exists = false) {
    this.#fs = fsl;
    this.path = path;
    this.#length = length;
    this.#exists = exists;
  }

  /** Bytes of complete records: where the next one goes. */
  get length(): number {
    return this.#length;
  }

  /** Cuts the log back to `length` bytes, durably: takes back records appended since it was that long. */
  cutBack(length: number): Promise<void> {
    const run = this.#chain.then(async () => {
      const fd = await this.#fs.open(this.path, 'r+');
      try {
        await this.#fs.ftruncate(fd, length);
        await this.#fs.fdatasync(fd);
      } finally {
        await this.#fs.close(fd).catch(() => undefined);
      }
      this.#length = length;
      this.#dirty = false;
    });
    this.#chain = run.catch(() => undefined);
    return run;
  }

  /** Appends one record per payload, durably. */
  append(payloads: readonly string[]): Promise<void> {
    const run = this.#chain.then(() => this.#append(payloads));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #append(payloads: readonly string[]): Promise<void> {
    const bytes = Buffer.from(payloads.map(frameLine).join(''));
    const creating = !this.#exists;
    let fd: number;
    try {
      fd = await this.#fs.open(this.path, creating ? 'wx' : 'r+', 0o600);
    } catch (cause) {
      throw new StorageError(`Could not open ${this.path}.`, { cause });
    }
    if (creating) this.#unsyncedName = true;
    this.#exists = true;
    try {
      try {
        if (this.#dirty) {
          await this.#fs.ftruncate(fd, this.#length);
          this.#dirty = false;
        }
        await writeAll(this.#fs, fd, bytes, this.#length);
      } catch (cause) {
        this.#dirty = true;
        await this.#fs.ftruncate(fd, this.#length).then(
          () => (this.#dirty = false),
          () => undefined,
        );
        throw new StorageError(`Could not write ${this.path}${fullDiskReason(cause)}.`, { cause });
      }
      try {
        await this.#fs.fdatasync(fd);
        if (this.#unsyncedName) {
          await syncDir(this.#fs, dirname(this.path));
          this.#unsyncedName = false;
        }
      } catch (cause) {
        this.#dirty = true;
        throw new StorageError(`Could not sync ${this.path}; the store refuses writes until it is reopened.`, { cause, poisoned: true });
      }
      this.#length += bytes.length;
    } finally {
      await this.#fs.close(fd).catch(() => undefined);
    }
  }
}
