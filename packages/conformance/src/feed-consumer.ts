import { DELETED_RECORD, SNAPSHOT_RECORD, type EventStore, type JsonValue, type RecordedEvent, type Snapshot, type StreamId } from '@sessionfold/core/kernel';
import { listStreams, readStream } from './support.js';

/** One stream as a consumer sees it: the latest snapshot and the events after it, by revision. */
export interface StreamView {
  stream: StreamId;
  revision: number;
  snapshot?: Snapshot;
  events: Array<{ revision: number; type: string; data: JsonValue; eventId?: string }>;
}

interface Folded {
  snapshot?: Snapshot;
  events: Map<number, StreamView['events'][number]>;
}

/**
 * A reader of the change feed that folds it into per-stream views, remembering the last position it saw,
 * the way a projection catches up after being away.
 */
export class FeedConsumer {
  #position = 0;
  readonly #streams = new Map<StreamId, Folded>();

  /** The last position applied (0 before the first record). */
  get position(): number {
    return this.#position;
  }

  /** Reads `readAll` from just after the last position seen and applies every record. */
  async catchUp(store: EventStore): Promise<void> {
    for await (const record of store.readAll({ fromPosition: this.#position + 1 })) {
      if (record.position <= this.#position) {
        throw new Error(`readAll returned position ${record.position} after position ${this.#position}`);
      }
      this.#apply(record);
      this.#position = record.position;
    }
  }

  /** The views of every stream the feed says exists, ascending by name. */
  views(): StreamView[] {
    return [...this.#streams.keys()].sort().map((stream) => {
      const folded = this.#streams.get(stream) as Folded;
      const events = [...folded.events.values()].sort((a, b) => a.revision - b.revision);
      const revision = Math.max(folded.snapshot?.revision ?? 0, events.at(-1)?.revision ?? 0);
      return { stream, revision, ...(folded.snapshot ? { snapshot: folded.snapshot } : {}), events };
    });
  }

  #apply(record: RecordedEvent): void {
    if (record.type === DELETED_RECORD) {
      this.#streams.delete(record.streamId);
      return;
    }
    const folded: Folded = this.#streams.get(record.streamId) ?? { events: new Map() };
    this.#streams.set(record.streamId, folded);
    if (record.type === SNAPSHOT_RECORD) {
      const snapshot = record.data as unknown as Snapshot;
      folded.snapshot = snapshot;
      for (const revision of [...folded.events.keys()]) if (revision <= snapshot.revision) folded.events.delete(revision);
      return;
    }
    folded.events.set(record.revision, {
      revision: record.revision,
      type: record.type,
      data: record.data,
      ...(record.eventId === undefined ? {} : { eventId: record.eventId }),
    });
  }
}

/** What `read()` of every listed stream says, in the same shape as `FeedConsumer.views()`. */
export async function viewsFromReads(store: EventStore): Promise<StreamView[]> {
  const views: StreamView[] = [];
  for (const { stream } of await listStreams(store)) {
    const read = await readStream(store, stream);
    views.push({
      stream,
      revision: read.revision,
      ...(read.snapshot ? { snapshot: read.snapshot } : {}),
      events: read.events.map((e) => ({
        revision: e.revision,
        type: e.type,
        data: e.data,
        ...(e.eventId === undefined ? {} : { eventId: e.eventId }),
      })),
    });
  }
  return views;
}
