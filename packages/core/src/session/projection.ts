import { foldStream, type StreamReducer } from '../kernel/fold.js';
import { cloneJson } from '../kernel/json.js';
import { prepareReducer } from '../kernel/versioning.js';
import { DELETED_RECORD, SNAPSHOT_RECORD, type EventStore, type RecordedEvent, type Snapshot, type StreamId } from '../kernel/port.js';
import { CATALOG_STREAM, SESSION_STREAM_PREFIX, sessionIdOfStream } from './ids.js';
import { isOpenCommand } from './decisions.js';
import { SessionHistoryError, messages } from './errors.js';
import type { CatalogState, Phase, SessionCommand, SessionStreamState, SessionSummary } from './model.js';
import type { FeedMark, ProjectedStream, ProjectionImage } from './projection-image.js';
import { catalogReducer, sessionSummaryReducer } from './reducer.js';
import { StartKeyIndex } from './start-key-index.js';
import { listedEntries, type ListSource } from './list-query.js';
import { receiptRecord, summaryRecord } from './view.js';

export type { ProjectedStream } from './projection-image.js';

/** What the projection tells of each catch-up or batch of followed changes that applied something. */
export interface CatchUpObservation {
  /** Feed records applied: how far behind the projection was. */
  changes: number;
  /** The feed position reached. */
  position: number;
  /** Time the catch-up or batch took. */
  durationMs: number;
  /** `catch-up`: read because a call asked for it; `follow`: pushed by the store's `follow` in the background. */
  source: 'catch-up' | 'follow';
}

/**
 * The service's in-memory view across sessions: every session's record and commands (not its log) and the
 * catalog, with an index by command id. Every change reaches it one way, from the store's change feed (`readAll`
 * on each `catchUp`, and the store's `follow` in the background), this service's own writes as any other
 * process's, so each query costs only the changes since the last one.
 */
export class SessionProjection {
  readonly #store: EventStore;
  readonly #sessions = new Map<StreamId, ProjectedStream<SessionStreamState>>();
  #catalog: ProjectedStream<CatalogState> = { revision: 0, state: catalogReducer.initial(CATALOG_STREAM) };
  readonly #commandStreams = new Map<string, StreamId>();
  readonly #startKeys = new StartKeyIndex();
  /** Commands noted since the last catch-up began: the catch-up indexes them (or their deletion). */
  readonly #noted = new Map<string, StreamId>();
  #highestEnqueueOrder = 0;
  #lastPosition = 0;
  #last: FeedMark | null = null;
  #queue: Promise<void> = Promise.resolve();
  /** Fired by `stop`: catch-ups end between two records, so closing never waits for a long one. */
  readonly #stopping = new AbortController();

  readonly #caughtUp: (catchUp: CatchUpObservation) => void;

  /** `caughtUp` hears of every catch-up (or batch of followed changes) that applied changes. */
  constructor(store: EventStore, caughtUp: (catchUp: CatchUpObservation) => void = () => undefined) {
    this.#store = store;
    this.#caughtUp = caughtUp;
  }

  /** The last feed position applied. */
  position(): number {
    return this.#lastPosition;
  }

  /** How many sessions the projection holds. */
  size(): number {
    return this.#sessions.size;
  }

  /**
   * The projection as it stands, for a checkpoint. Every change replaces whole states (never edits one in place)
   * and moves the position in the same step, so the image stays consistent while the projection moves on.
   */
  image(): ProjectionImage {
    return {
      position: this.#lastPosition,
      last: this.#last,
      highestEnqueueOrder: this.#highestEnqueueOrder,
      sessions: [...this.#sessions],
      catalog: this.#catalog,
    };
  }

  /** Starts from a checkpoint's image instead of the feed's beginning; only before the first catch-up. */
  restore(image: ProjectionImage): void {
    this.#sessions.clear();
    this.#commandStreams.clear();
    this.#startKeys.clear();
    this.#highestEnqueueOrder = image.highestEnqueueOrder;
    for (const [stream, projected] of image.sessions) {
      this.#sessions.set(stream, projected);
      this.#index(stream, undefined, projected);
      this.#startKeys.update(stream, projected.state);
    }
    this.#catalog = image.catalog;
    this.#lastPosition = image.position;
    this.#last = image.last;
  }

  /** Ends catch-ups in flight between two records and refuses later ones (with the service's `closed` error). */
  stop(): void {
    this.#stopping.abort();
  }

  /**
   * Applies every change committed since the last call (all of them on the first). Calls are serialised,
   * and each one reads the feed afresh, so it returns only after seeing what was committed before it began.
   */
  catchUp(): Promise<void> {
    return this.#enqueue(() => this.#readFeed());
  }

  /**
   * Applies records the store's `follow` yielded, in the catch-ups' queue: `take` hands over those read so far
   * and is called again until it returns none. Records at or before the position reached are skipped: a
   * catch-up may have applied them already.
   */
  applyFollowed(take: () => readonly RecordedEvent[]): Promise<void> {
    return this.#enqueue(async () => {
      const started = performance.now();
      let changes = 0;
      for (let batch = take(); batch.length > 0; batch = take()) {
        for (const record of batch) {
          if (this.#stopping.signal.aborted) return;
          if (record.position <= this.#lastPosition) continue;
          await this.#apply(record);
          changes++;
        }
      }
      if (changes > 0) this.#caughtUp({ changes, position: this.#lastPosition, durationMs: performance.now() - started, source: 'follow' });
    });
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs `task` between catch-ups, none running meanwhile. A compaction runs so: a store may drop a
   * stream's events from the feed before the catch-up reading it reaches them, and record their snapshot only
   * past the end that catch-up reads to, which would leave the catch-up without either.
   */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Resolves once the catch-ups already asked for have finished (whether they succeeded or not). */
  idle(): Promise<void> {
    return this.#queue;
  }

  /** Session streams in name order with their projected state. */
  sessions(): [StreamId, ProjectedStream<SessionStreamState>][] {
    return [...this.#sessions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Session streams in `phase`, in name order: filtered before sorting, so a few among many cost little. */
  sessionsInPhase(phase: Phase): [StreamId, ProjectedStream<SessionStreamState>][] {
    const found = [...this.#sessions].filter(([, projected]) => projected.state.record?.phase === phase);
    return found.sort(([a], [b]) => compareText(a, b));
  }

  /** What a session listing reads: every session stream (in no order) and the catalog's receipts, uncopied. */
  listSource(): ListSource {
    return { sessions: this.#sessions.entries(), receipts: this.#catalog.state.receipts };
  }

  /** The projected catalog. */
  catalog(): ProjectedStream<CatalogState> {
    return this.#catalog;
  }

  /**
   * Summaries of every session and every completion receipt (of `phase` only, if given), most recent first by
   * `orderBy` (`updatedAt` by default). A kept completed session is listed once, under its own id, not by its receipt.
   */
  list(phase?: Phase, orderBy: 'updatedAt' | 'lastActivityAt' = 'updatedAt'): SessionSummary[] {
    const records: SessionSummary[] = [];
    // In stream-name order, so sessions whose times tie keep one order.
    for (const entry of listedEntries({ sessions: this.sessions(), receipts: this.#catalog.state.receipts })) {
      records.push(entry.receipt === undefined ? summaryRecord(entry.record, entry.state) : receiptRecord(entry.receipt, true));
    }
    const shown = phase === undefined ? records : records.filter((record) => record.phase === phase);
    // A stable sort keeps sessions (by stream name) ahead of receipts when times tie.
    return shown.sort((a, b) => compareText(b[orderBy], a[orderBy]));
  }

  /** The kept completed session whose receipt names session object `sessionObjectId`, if this projection holds one. */
  keptStreamOf(sessionObjectId: string): StreamId | undefined {
    for (const [stream, projected] of this.#sessions) {
      const { receipt, kept } = projected.state;
      if (kept === true && receipt?.sessionObjectId === sessionObjectId) return stream;
    }
    return undefined;
  }

  /**
   * The next open command of every session (lowest `sequence`), by `createdAt`, then `enqueueOrder`, then
   * session id: enqueue order, exactly for enqueues one service decided, to the millisecond across services.
   */
  commandHeads(): SessionCommand[] {
    const heads: SessionCommand[] = [];
    for (const [, projected] of this.#sessions) {
      // A completed session's commands are done with, whatever state they were left in.
      if (projected.state.record?.phase === 'complete') continue;
      let head: SessionCommand | undefined;
      for (const command of projected.state.commands) {
        if (isOpenCommand(command) && (!head || command.sequence < head.sequence)) head = command;
      }
      if (head) heads.push(cloneJson(head));
    }
    return heads.sort((a, b) => compareText(a.createdAt, b.createdAt) || a.enqueueOrder - b.enqueueOrder || compareText(a.sessionId, b.sessionId));
  }

  /** The live session streams whose latest control state carries start key `key` (`startIdempotencyId`), in name order. */
  liveSessionsCarrying(key: string): StreamId[] {
    return this.#startKeys.streams(key);
  }

  /** The stream of the session holding command `commandId`, if known (from the feed, or noted by `noteCommand`). */
  streamOfCommand(commandId: string): StreamId | undefined {
    return this.#commandStreams.get(commandId) ?? this.#noted.get(commandId);
  }

  /**
   * Notes the stream of a command this service has just enqueued, so that a lookup finds it before the next
   * catch-up. A command never moves to another stream, so the note can only become stale by the session's
   * deletion, and then the stream itself says the command is gone.
   */
  noteCommand(commandId: string, stream: StreamId): void {
    if (this.#commandStreams.get(commandId) !== stream) this.#noted.set(commandId, stream);
  }

  /** The highest `enqueueOrder` of any command seen so far (also of commands gone since). */
  highestEnqueueOrder(): number {
    return this.#highestEnqueueOrder;
  }

  /**
   * Counts an `enqueueOrder` this service has just given out as seen. The feed alone cannot vouch for it: a
   * session deleted before a catch-up reached its commands takes them out of the feed, and a checkpoint saved
   * without them would let a later service hand their numbers out again.
   */
  noteEnqueueOrder(order: number): void {
    if (order > this.#highestEnqueueOrder) this.#highestEnqueueOrder = order;
  }

  async #readFeed(): Promise<void> {
    const stopping = this.#stopping.signal;
    if (stopping.aborted) throw SessionHistoryError.invalid(messages.closed);
    const noted = [...this.#noted.keys()];
    const started = performance.now();
    let changes = 0;
    for await (const record of this.#store.readAll({ fromPosition: this.#lastPosition + 1 })) {
      if (stopping.aborted) throw SessionHistoryError.invalid(messages.closed);
      // The store's follow may have delivered this one while the read was under way.
      if (record.position <= this.#lastPosition) continue;
      await this.#apply(record);
      changes++;
    }
    for (const commandId of noted) this.#noted.delete(commandId);
    if (changes > 0) this.#caughtUp({ changes, position: this.#lastPosition, durationMs: performance.now() - started, source: 'catch-up' });
  }

  /** Applies one feed record; the state and the position move together, with no wait in between. */
  async #apply(record: RecordedEvent): Promise<void> {
    const stream = record.streamId;
    if (stream === CATALOG_STREAM) {
      const next = await this.#follow(stream, this.#catalog, catalogReducer, record);
      this.#catalog = next ?? { revision: 0, state: catalogReducer.initial(stream) };
    } else if (stream.startsWith(SESSION_STREAM_PREFIX) && sessionIdOfStream(stream) !== undefined) {
      const previous = this.#sessions.get(stream);
      const next = await this.#follow(stream, previous, sessionSummaryReducer, record);
      if (next !== previous) {
        this.#unindex(stream, previous, next);
        if (next) this.#sessions.set(stream, next);
        else this.#sessions.delete(stream);
        this.#index(stream, previous, next);
        this.#startKeys.update(stream, next?.state);
      }
    }
    this.#lastPosition = record.position;
    this.#last = { position: record.position, streamId: stream, revision: record.revision, type: record.type };
  }

  /** The stream's projection after `record`; undefined once the stream is deleted. */
  async #follow<S>(
    stream: StreamId,
    current: ProjectedStream<S> | undefined,
    reducer: StreamReducer<S>,
    record: RecordedEvent,
  ): Promise<ProjectedStream<S> | undefined> {
    const revision = current?.revision ?? 0;
    if (record.type === DELETED_RECORD) return undefined;
    // Older snapshots and events are brought to the current shapes, newer ones refused, as in every fold.
    const prepared = prepareReducer(reducer);
    if (record.type === SNAPSHOT_RECORD) {
      const snapshot = record.data as unknown as Snapshot;
      if (snapshot.revision <= revision) return current;
      return { revision: snapshot.revision, state: prepared.restore(stream, snapshot) };
    }
    if (record.revision <= revision) return current;
    if (record.revision === revision + 1) {
      return { revision: record.revision, state: prepared.apply(current?.state ?? reducer.initial(stream), record) };
    }
    // A gap: changes of this stream are missing from the feed we saw, so take the stream as it is now.
    const folded = await foldStream(this.#store, stream, reducer);
    return folded.exists ? { revision: folded.revision, state: folded.state } : undefined;
  }

  #unindex(stream: StreamId, previous: ProjectedStream<SessionStreamState> | undefined, next: ProjectedStream<SessionStreamState> | undefined): void {
    if (!previous) return;
    if (next && extendsCommands(previous.state, next.state)) return;
    for (const command of previous.state.commands) {
      if (this.#commandStreams.get(command.id) === stream) this.#commandStreams.delete(command.id);
    }
  }

  #index(stream: StreamId, previous: ProjectedStream<SessionStreamState> | undefined, next: ProjectedStream<SessionStreamState> | undefined): void {
    if (!next) return;
    // Commands are only ever added, so after an ordinary event only the new tail needs indexing.
    const known = previous && extendsCommands(previous.state, next.state) ? previous.state.commands.length : 0;
    for (const command of next.state.commands.slice(known)) {
      this.#commandStreams.set(command.id, stream);
      // Indexed now: the note has served, and a service whose projection only follows would keep notes forever.
      this.#noted.delete(command.id);
      if (command.enqueueOrder > this.#highestEnqueueOrder) this.#highestEnqueueOrder = command.enqueueOrder;
    }
  }
}

/** Whether `next` holds the commands of `previous` and perhaps more (not a different stream's history). */
function extendsCommands(previous: SessionStreamState, next: SessionStreamState): boolean {
  const count = previous.commands.length;
  return next.commands.length >= count && (count === 0 || next.commands[count - 1]?.id === previous.commands[count - 1]?.id);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
