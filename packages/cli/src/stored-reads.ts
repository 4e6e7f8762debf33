import { storedEvents, type EventStore, type StoredEvent, type StoredStreamRead } from '@sessionfold/core/kernel';

/** What the stored reads use of a store: its reads, with or without the optional stored ones. */
export type StoreReads = Pick<EventStore, 'read' | 'readAll' | 'readStored' | 'readAllStored'>;

/**
 * A stream read with each event's data as JSON text: the store's `readStored`, or (a store without one) its `read`
 * with each event's data serialized. Commands that print events copy the text instead of serializing parsed data.
 */
export async function readStored(store: StoreReads, stream: string, options: { fromRevision?: number }): Promise<StoredStreamRead> {
  if (store.readStored) return store.readStored(stream, options);
  const read = await store.read(stream, options);
  return { ...read, events: storedEvents(read.events) };
}

/** The feed with each record's data as JSON text: the store's `readAllStored`, or its `readAll` serialized. */
export function readAllStored(store: StoreReads, options: { fromPosition?: number }): AsyncIterable<StoredEvent> {
  return store.readAllStored ? store.readAllStored(options) : storedEvents(store.readAll(options));
}
