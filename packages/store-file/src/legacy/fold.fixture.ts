import { cpSync, readdirSync, readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isTemporaryName } from '@sessionfold/atomic-write';
import { DELETED_RECORD, SNAPSHOT_RECORD, type RecordedEvent } from '@sessionfold/core/kernel';
import { nodeFileSystem } from '../fs-layer.js';
import { sha256Hex } from '../journal-codec.js';
import { readStoreFormat } from '../store-format.js';
import { FIRST_SEGMENT } from './upgrade.js';
import { freshDir } from '../test-support.fixture.js';

/** The checked-in legacy stores. */
export const FIXTURES = ['release-0.1.0', 'format-3'] as const;
export type FixtureName = (typeof FIXTURES)[number];

export function fixturePath(name: FixtureName): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

export function expectedOf(name: FixtureName): Record<string, unknown> {
  return JSON.parse(readFileSync(fileURLToPath(new URL(`../fixtures/${name}.expected.json`, import.meta.url)), 'utf8')) as Record<string, unknown>;
}

/** A fresh copy of a fixture: tests never write to the checked-in files. */
export function copyOfFixture(name: FixtureName): string {
  const dir = join(freshDir(), 'store');
  cpSync(fixturePath(name), dir, { recursive: true });
  return dir;
}

/** Every file under `dir` (relative path → base64 bytes), leaving out `skip` top-level entries and atomic-write temporaries. */
export function contents(dir: string, skip: readonly string[] = []): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const relative = path.slice(dir.length + 1);
    if (!entry.isFile() || skip.includes(relative.split('/')[0] as string) || isTemporaryName(entry.name)) continue;
    files[relative] = readFileSync(path).toString('base64');
  }
  return files;
}

/** The payload of a framed line, after checking its frame and checksum. */
function payloadOf(line: string): Record<string, unknown> {
  if (!line.endsWith('\n') || line.indexOf('\n') !== line.length - 1) throw new Error(`not one line: ${line}`);
  const payload = line.slice(65, -1);
  if (line[64] !== ' ' || line.slice(0, 64) !== sha256Hex(payload)) throw new Error(`bad frame: ${line}`);
  return JSON.parse(payload) as Record<string, unknown>;
}

/** What the store's reads show of format-4 lines: a pure fold, as the memory store would read them. */
export interface Folded {
  streams: { stream: string; revision: number }[];
  reads: Record<string, { snapshot?: unknown; events: RecordedEvent[] }>;
  feed: RecordedEvent[];
  blobs: Record<string, string[]>;
}

/**
 * Folds format-4 lines: per stream, a `$deleted` starts a new incarnation, a `$snapshot` replaces the snapshot and
 * drops the events it covers; the feed is every record with a position, in order (positions must rise).
 */
export function foldLines(lines: readonly string[]): Folded {
  const state = new Map<string, { revision: number; snapshot?: { revision: number }; events: RecordedEvent[] }>();
  const feed: RecordedEvent[] = [];
  const blobs: Record<string, string[]> = {};
  let last = 0;
  for (const line of lines) {
    const v = payloadOf(line);
    const stream = v.stream as string;
    if (typeof v.blob === 'string') {
      (blobs[stream] ??= []).push(v.blob);
      continue;
    }
    if ((v.position as number) <= last) throw new Error(`position ${String(v.position)} after ${last}`);
    last = v.position as number;
    const record = {
      streamId: stream,
      type: v.type as string,
      data: v.data,
      schemaVersion: (v.schemaVersion as number | undefined) ?? 1,
      revision: v.revision as number,
      position: v.position as number,
      recordedAt: v.recordedAt as string,
      ...(v.eventId === undefined ? {} : { eventId: v.eventId as string }),
    } as RecordedEvent;
    feed.push(record);
    const current = state.get(stream) ?? { revision: 0, events: [] };
    state.set(stream, current);
    if (record.type === DELETED_RECORD) {
      state.set(stream, { revision: 0, events: [] });
    } else if (record.type === SNAPSHOT_RECORD) {
      const snapshot = record.data as { revision: number };
      current.snapshot = snapshot;
      current.events = current.events.filter((event) => event.revision > snapshot.revision);
      current.revision = Math.max(current.revision, snapshot.revision);
    } else {
      // A stream's first record may be an event past revision 1: compaction removed the lines before it.
      if (current.revision > 0 && record.revision !== current.revision + 1) throw new Error(`${stream}: revision ${record.revision} after ${current.revision}`);
      current.events.push(record);
      current.revision = record.revision;
    }
  }
  const names = [...state.keys()].filter((stream) => (state.get(stream)?.revision ?? 0) > 0).sort();
  const reads: Folded['reads'] = {};
  for (const stream of names) {
    const { snapshot, events } = state.get(stream) as { snapshot?: unknown; events: RecordedEvent[] };
    reads[stream] = { ...(snapshot === undefined ? {} : { snapshot }), events };
  }
  return { streams: names.map((stream) => ({ stream, revision: state.get(stream)?.revision ?? 0 })), reads, feed, blobs };
}

/** A record without its time: what the fixtures' expectations keep. */
export const withoutTime = ({ recordedAt: _r, ...rest }: RecordedEvent): Omit<RecordedEvent, 'recordedAt'> => rest;

/** What a format-4 store keeps of the old layout, besides format.json and the new log/. */
const KEPT = ['blobs', 'checkpoints', 'store-id.json', 'LOCK'];

/** Checks `dir` is a clean format-4 store whose one segment holds exactly `lines`, next to the kept entries of `fixture`. */
export async function expectCleanFormat4(dir: string, lines: readonly string[], fixture: string): Promise<void> {
  expect(await readStoreFormat(nodeFileSystem, join(dir, 'format.json'))).toBe(4);
  const kept = readdirSync(fixture).filter((name) => KEPT.includes(name));
  expect(readdirSync(dir).sort()).toEqual([...kept, 'format.json', 'log'].sort());
  expect(readdirSync(join(dir, 'log'))).toEqual([FIRST_SEGMENT]);
  expect(readFileSync(join(dir, 'log', FIRST_SEGMENT), 'utf8')).toBe(lines.join(''));
}
