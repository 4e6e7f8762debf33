import { createHash } from 'node:crypto';
import type { JsonValue, NewEvent, RecordedEvent, StreamReducer } from '@sessionfold/core';

const TEXT = 'The quick brown fox jumps over the lazy dog while the session keeps folding events into its record. ';

/** The i-th benchmark event: a transcript-like entry of about 150 bytes of JSON. */
export function benchEvent(i: number): NewEvent {
  return { type: 'TranscriptAppended', data: { role: i % 2 === 0 ? 'user' : 'assistant', text: TEXT, n: i } };
}

/** `count` consecutive benchmark events starting at index `from`. */
export function benchEvents(from: number, count: number): NewEvent[] {
  return Array.from({ length: count }, (_, k) => benchEvent(from + k));
}

/** The folded record of a benchmark stream. */
export interface BenchRecord {
  events: number;
  chars: number;
  lastRevision: number;
}

/** Folds a benchmark record from one event's data: the same work for every store and every raw limit. */
export function foldData(record: BenchRecord, data: JsonValue, revision: number): BenchRecord {
  const text = typeof data === 'object' && data !== null && !Array.isArray(data) ? data['text'] : undefined;
  record.events++;
  record.chars += typeof text === 'string' ? text.length : 0;
  record.lastRevision = revision;
  return record;
}

/** A fresh, empty benchmark record. */
export function emptyRecord(): BenchRecord {
  return { events: 0, chars: 0, lastRevision: 0 };
}

/** The reducer the replay scenarios fold with. */
export const benchReducer: StreamReducer<BenchRecord> = {
  schemaVersion: 1,
  initial: () => emptyRecord(),
  apply: (state, event: RecordedEvent) => foldData(state, event.data, event.revision),
  toSnapshot: (state) => ({ events: state.events, chars: state.chars, lastRevision: state.lastRevision }),
  fromSnapshot: (state) => {
    const s = state as { events?: unknown; chars?: unknown; lastRevision?: unknown };
    return { events: Number(s.events ?? 0), chars: Number(s.chars ?? 0), lastRevision: Number(s.lastRevision ?? 0) };
  },
};

/**
 * One checksummed line of the file store's log (`<sha256 hex> <payload>\n`), byte for byte as the store frames
 * an event of `stream` (`more` on every line of a batch but its last).
 */
export function logLine(stream: string, event: NewEvent, revision: number, position: number, recordedAt: string, more = false): string {
  const payload =
    `{"stream":${JSON.stringify(stream)},"revision":${revision},"position":${position},"recordedAt":${JSON.stringify(recordedAt)},` +
    `"type":${JSON.stringify(event.type)}${more ? ',"more":true' : ''},"data":${JSON.stringify(event.data)}}`;
  return `${createHash('sha256').update(payload).digest('hex')} ${payload}\n`;
}

/** The row payload a raw SQLite table stores for one event: the event's data as JSON. */
export function rowJson(event: NewEvent): string {
  return JSON.stringify(event.data);
}
