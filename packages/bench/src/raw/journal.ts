import { hash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { JsonValue } from '@sessionfold/core';

const NEWLINE = 0x0a;
const CHUNK = 1 << 20;

/** Reads the segments of the log in `directory` in name order (log order) with `readJournal`; returns the count. */
export function readLog(directory: string, onRecord: (record: { revision: number; data: JsonValue }) => void): number {
  let count = 0;
  for (const name of readdirSync(directory).sort()) count += readJournal(join(directory, name), onRecord);
  return count;
}

/**
 * Reads a checksummed JSONL file (a log segment) in 1 MiB chunks: finds each `\n`, hashes the payload bytes,
 * compares the digest with the line's hex prefix and parses the payload. Calls `onRecord` per record; returns the count.
 * This is the fastest reader found for the framing, and the raw limit of every file-store read.
 */
export function readJournal(path: string, onRecord: (record: { revision: number; data: JsonValue }) => void): number {
  const fd = openSync(path, 'r');
  let buffer = Buffer.allocUnsafe(CHUNK);
  let filled = 0;
  let count = 0;
  try {
    for (;;) {
      if (filled === buffer.length) {
        const bigger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(bigger, 0, 0, filled);
        buffer = bigger;
      }
      const read = readSync(fd, buffer, filled, buffer.length - filled, null);
      if (read === 0) break;
      filled += read;
      const view = buffer.subarray(0, filled);
      let start = 0;
      for (let nl = view.indexOf(NEWLINE, start); nl !== -1; nl = view.indexOf(NEWLINE, start)) {
        const payload = view.subarray(start + 65, nl);
        if (hash('sha256', payload, 'hex') !== view.toString('latin1', start, start + 64)) {
          throw new Error(`bench: checksum mismatch in ${path} at record ${count + 1}`);
        }
        onRecord(JSON.parse(payload.toString('utf8')) as { revision: number; data: JsonValue });
        count++;
        start = nl + 1;
      }
      buffer.copy(buffer, 0, start, filled);
      filled -= start;
    }
  } finally {
    closeSync(fd);
  }
  return count;
}
