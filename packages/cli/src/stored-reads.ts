import { storedEvents, type EventStore, type StoredEvent, type StoredStreamRead } from '@sessionfold/core/kernel';

/**
 * A stream read with each event's data as JSON text: the store's `readStored`, or (a store without one) its `read`
 * with each event's data serialized. Commands that print events copy the text instead of serializing parsed data.
 */
export async function readStored(store: EventStore, stream: string, options: { fromRevision?: number }): Promise<StoredStreamRead> {
  if (store.readStored) return store.readStored(stream, options);
  const read = await store.read(stream, options);
  return { ...read, events: storedEvents(read.events) };
}

/** The feed with each record's data as JSON text: the store's `readAllStored`, or its `readAll` serialized. */
export function readAllStored(store: EventStore, options: { fromPosition?: number }): AsyncIterable<StoredEvent> {
  return store.readAllStored ? store.readAllStored(options) : storedEvents(store.readAll(options));
}
