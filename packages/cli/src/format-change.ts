import type { JsonValue, StoredEvent } from '@sessionfold/core/kernel';
import type { Output } from './output.js';

/** A change of a stream or of the feed as printed: the port's RecordedEvent, or a snapshot without a position. */
export interface PrintedChange {
  streamId: string;
  type: string;
  revision: number;
  data: JsonValue;
  position?: number;
  recordedAt?: string;
  eventId?: string;
}

/**
 * Prints one change as one JSON line, with or without --json: raw events are for tools (jq, grep) as much as
 * for people, and a line of JSON is the one form both read.
 */
export function formatChange(out: Output, change: PrintedChange): Promise<void> {
  return out.line(change);
}

/**
 * Prints every change of `changes` as `formatChange` does, until they end or `signal` fires. Waits only when
 * stdout is full, so a stream of events costs no promise per line.
 */
export async function printChanges(out: Output, changes: AsyncIterable<PrintedChange>, signal?: AbortSignal): Promise<void> {
  for await (const change of changes) {
    if (out.appendLine(change)) await out.flush();
    if (signal?.aborted) break;
  }
}

/**
 * The line `formatChange` prints for the same change read with its data parsed, built from the stored JSON text:
 * members in the order every store gives them, the data's text copied (the port promises it is what
 * `JSON.stringify` gives), so a long read spends nothing on serializing what the store just parsed.
 */
export function storedChangeLine(change: StoredEvent): string {
  const eventId = change.eventId === undefined ? '' : `,"eventId":${JSON.stringify(change.eventId)}`;
  return (
    `{"streamId":${JSON.stringify(change.streamId)},"type":${JSON.stringify(change.type)},"data":${change.dataJson},` +
    `"schemaVersion":${change.schemaVersion},"revision":${change.revision},"position":${change.position},` +
    `"recordedAt":${JSON.stringify(change.recordedAt)}${eventId}}\n`
  );
}

/** `printChanges` of changes read with their data as stored text (`readStored`, `readAllStored`). */
export async function printStoredChanges(out: Output, changes: AsyncIterable<StoredEvent>, signal?: AbortSignal): Promise<void> {
  for await (const change of changes) {
    if (out.append(storedChangeLine(change))) await out.flush();
    if (signal?.aborted) break;
  }
}
