import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SESSION_STREAM_PREFIX } from '@sessionfold/core/session';
import type { EventStore } from '@sessionfold/core/kernel';
import type { StoreLocation } from './store-url.js';

/** Counts of what a store holds. */
export interface StoreCounts {
  sessions: number;
  streams: number;
  /** Events stored (after compaction: the ones not folded into a snapshot). */
  events: number;
  /** The position of the last change in the feed (0: none). */
  headPosition: number;
}

/** Counts streams and sessions from `streams()` and events from the change feed, streaming both. */
export async function countStore(store: EventStore): Promise<StoreCounts> {
  let sessions = 0;
  let streams = 0;
  for await (const { stream } of store.streams()) {
    streams++;
    if (stream.startsWith(SESSION_STREAM_PREFIX)) sessions++;
  }
  let events = 0;
  let headPosition = 0;
  for await (const change of store.readAll()) {
    if (!change.type.startsWith('$')) events++;
    headPosition = change.position;
  }
  return { sessions, streams, events, headPosition };
}

/** Bytes the store takes on disk: the directory's files, or the SQLite file with its side files; undefined for a server. */
export async function sizeOnDisk(location: StoreLocation): Promise<number | undefined> {
  if (location.kind === 'file') return directorySize(location.directory);
  if (location.kind === 'sqlite') {
    let total = 0;
    for (const suffix of ['', '-wal', '-shm'])
      total += await stat(location.path + suffix).then(
        (s) => s.size,
        () => 0,
      );
    return total;
  }
  return undefined;
}

async function directorySize(directory: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) total += await directorySize(path);
    else if (entry.isFile())
      total += await stat(path).then(
        (s) => s.size,
        () => 0,
      );
  }
  return total;
}

/** A byte count for people: 1.5 MiB. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}
