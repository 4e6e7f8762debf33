import type { EventStore, StreamId } from '../kernel/port.js';
import { decideStageObject, objectStagingRefusal, type Decision } from './decisions.js';
import { SessionHistoryError } from './errors.js';
import type { SessionEvent } from './events.js';
import type { SessionStreamState } from './model.js';
import { logEntry } from './reducer.js';
import type { StreamWriter } from './stream-writer.js';
import { sanitiseFileName, sanitiseMediaType, type StoredObject } from './view.js';

/** An object to stage: its bytes and what the caller says they are. */
export interface ObjectToStage {
  fileName?: string | null | undefined;
  mediaType: string;
  bytes: Uint8Array;
}

/** Staged objects: bytes kept as blobs the session stream owns, metadata as `ObjectStaged` log entries. */
export class SessionObjects {
  readonly #store: EventStore;
  readonly #sessions: StreamWriter<SessionStreamState, SessionEvent>;

  constructor(store: EventStore, sessions: StreamWriter<SessionStreamState, SessionEvent>) {
    this.#store = store;
    this.#sessions = sessions;
  }

  /** Stores the bytes, then records the object in the session's log; returns its id `pending:N`. */
  async stage(stream: StreamId, input: ObjectToStage): Promise<string> {
    // Refuse before storing bytes that no event would ever own.
    const refusal = objectStagingRefusal((await this.#sessions.load(stream)).state);
    if (refusal) throw refusal;
    const sha256 = await this.#store.putBlob(stream, input.bytes);
    const metadata = { fileName: input.fileName, mediaType: input.mediaType, size: input.bytes.byteLength, sha256 };
    const result = await this.#sessions.mutate(stream, (state, at): Decision => decideStageObject(state, metadata, at));
    const staged = result.events.find((event) => event.type === 'ObjectStaged');
    if (staged?.type !== 'ObjectStaged') throw new Error('staging an object appended no ObjectStaged event');
    return staged.data.pendingId;
  }

  /** The object at log position `position` with a header-safe file name and media type; `not_found` if none. */
  async read(stream: StreamId, position: number): Promise<StoredObject> {
    const folded = await this.#sessions.load(stream);
    const staged = folded.exists ? logEntry(folded.state, position)?.object : undefined;
    if (!staged) throw SessionHistoryError.notFound();
    const bytes = await this.#store.getBlob(staged.sha256);
    if (!bytes) throw SessionHistoryError.notFound();
    return { fileName: sanitiseFileName(staged.fileName), mediaType: sanitiseMediaType(staged.mediaType), bytes };
  }
}
