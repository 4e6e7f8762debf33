import type { RecordedEvent, StoredEvent } from './port.js';

/** `event` as a `StoredEvent`: its data serialized, for a store (or a caller) that holds parsed events only. */
export function toStoredEvent(event: RecordedEvent): StoredEvent {
  const { data, ...metadata } = event;
  return { ...metadata, dataJson: JSON.stringify(data) };
}

/** Each event of `events` as `toStoredEvent` makes it, in order. */
export async function* storedEvents(events: AsyncIterable<RecordedEvent>): AsyncGenerator<StoredEvent> {
  for await (const event of events) yield toStoredEvent(event);
}
