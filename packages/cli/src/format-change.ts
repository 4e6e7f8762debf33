import type { JsonValue, StoredEvent } from '@sessionfold/core/kernel';
import { forEachItem } from '@sessionfold/core/store-kit';
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
 * stdout is full, and takes the events a read holds without a promise each (`forEachItem`).
 */
export function printChanges(out: Output, changes: AsyncIterable<PrintedChange>, signal?: AbortSignal): Promise<void> {
  return forEachItem(changes, (change) => (out.appendLine(change) ? out.flush() : undefined), signal);
}

/**
 * The line `formatChange` prints for the same change read with its data parsed, built from the stored JSON text:
 * members in the order every store gives them, the data's text copied (the port promises it is what
 * `JSON.stringify` gives), so a long read spends nothing on serializing what the store just parsed.
 */
export function storedChangeLine(change: StoredEvent, strings: JsonStrings = new JsonStrings()): string {
  const eventId = change.eventId === undefined ? '' : `,"eventId":${JSON.stringify(change.eventId)}`;
  return (
    `{"streamId":${strings.streamId(change.streamId)},"type":${strings.type(change.type)},"data":${change.dataJson},` +
    `"schemaVersion":${change.schemaVersion},"revision":${change.revision},"position":${change.position},` +
    `"recordedAt":${strings.recordedAt(change.recordedAt)}${eventId}}\n`
  );
}

/**
 * Stream names, types and commit times as JSON strings, each kept from the event before: consecutive events
 * mostly share all three (one stream, one batch), and serializing them again was a third of building a line.
 */
export class JsonStrings {
  #stream = ['', '""'];
  #type = ['', '""'];
  #recordedAt = ['', '""'];

  streamId(text: string): string {
    return JsonStrings.#of(this.#stream, text);
  }

  type(text: string): string {
    return JsonStrings.#of(this.#type, text);
  }

  recordedAt(text: string): string {
    return JsonStrings.#of(this.#recordedAt, text);
  }

  static #of(last: string[], text: string): string {
    if (last[0] !== text) {
      last[0] = text;
      last[1] = JSON.stringify(text);
    }
    return last[1] as string;
  }
}

/** `printChanges` of changes read with their data as stored text (`readStored`, `readAllStored`). */
export function printStoredChanges(out: Output, changes: AsyncIterable<StoredEvent>, signal?: AbortSignal): Promise<void> {
  const strings = new JsonStrings();
  return forEachItem(changes, (change) => (out.append(storedChangeLine(change, strings)) ? out.flush() : undefined), signal);
}
