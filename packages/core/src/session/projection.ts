import { foldStream, type StreamReducer } from '../kernel/fold.js';
import { cloneJson } from '../kernel/json.js';
import { prepareReducer } from '../kernel/versioning.js';
import { DELETED_RECORD, SNAPSHOT_RECORD, type EventStore, type RecordedEvent, type Snapshot, type StreamId } from '../kernel/port.js';
import { CATALOG_STREAM, SESSION_STREAM_PREFIX, sessionIdOfStream } from './ids.js';
import { isOpenCommand } from './decisions.js';
import { SessionHistoryError, messages } from './errors.js';
import type { CatalogState, Phase, SessionCommand, SessionStreamState, SessionSummary } from './model.js';
import type { FeedMark, ProjectedStream, ProjectionImage } from './projection-image.js';
import type { OwnAppend } from './stream-writer.js';
import { catalogReducer, sessionSummaryReducer, withoutLog } from './reducer.js';
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
 * The service's in-memory view across sessions: every session's record and commands (not its log) and
 * the catalog, with an index by command id. It follows the store's change feed
 * (`readAll`), so writes by other processes are seen on the next `catchUp`, and each query costs only
 * the changes since the last one.
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
  /** Per session stream, the feed position of the last event of the history its state folds, where known. */
  readonly #lastApplied = new Map<StreamId, number>();
  #lastPosition = 0;
  #last: FeedMark | null = null;
  #queue: Promise<void> = Promise.resolve();
  /** This service's appends that came in ahead of one still to be applied: tried again after each one applied. */
  #early: { stream: StreamId; append: OwnAppend }[] = [];
  #earlyEvents = 0;
  /** Fired by `stop`: catch-ups end between two records, so closing never waits for a long one. */
  readonly #stopping = new AbortController();

  readonly #caughtUp: (catchUp: CatchUpObservation) => void;
  readonly #appliedOwn: (changes: number) => void;

  /** `caughtUp` hears of every catch-up that applied changes; `appliedOwn` of the changes `applyOwn` applied. */
  constructor(store: EventStore, caughtUp: (catchUp: CatchUpObservation) => void = () => undefined, appliedOwn: (changes: number) => void = () => undefined) {
    this.#store = store;
    this.#caughtUp = caughtUp;
    this.#appliedOwn = appliedOwn;
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
    this.#lastApplied.clear();
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
      if (this.#early.length > 0) await this.#retryEarly();
      if (changes > 0) this.#caughtUp({ changes, position: this.#lastPosition, durationMs: performance.now() - started, source: 'follow' });
    });
  }

  /**
   * Applies an append of this service, in the catch-ups' queue, without reading the feed — but only where the
   * feed could hold nothing else: when its events fill exactly the positions between the one reached and the
   * append's last (positions increase strictly, so no other change fits in between). One that came in ahead
   * of an earlier one waits for it (a few are kept); anything else is left for the feed to bring.
   */
  applyOwn(stream: StreamId, append: OwnAppend): void {
    void this.#enqueue(async () => {
      if (this.#stopping.signal.aborted) return;
      if (!(await this.#applyOwnAt(stream, append))) {
        this.#early.push({ stream, append });
        this.#earlyEvents += append.events.length;
        while (this.#early.length > MAX_EARLY || this.#earlyEvents > MAX_EARLY_EVENTS) this.#dropEarly(0);
        return;
      }
      await this.#retryEarly();
      // A failure (a reducer refusing an event, a fold after a gap) is the feed's to report: the next catch-up reads
      // the same records from the position this one stopped at, and fails or applies them there.
    }).catch(() => undefined);
  }

  /** Applies the early appends that fit now, and lets go of those the projection has passed. */
  async #retryEarly(): Promise<void> {
    for (let index = 0; index < this.#early.length; ) {
      const early = this.#early[index] as { stream: StreamId; append: OwnAppend };
      if (early.append.position <= this.#lastPosition) this.#dropEarly(index);
      else if (await this.#applyOwnAt(early.stream, early.append)) {
        this.#dropEarly(index);
        index = 0;
      } else index++;
    }
  }

  #dropEarly(index: number): void {
    const [dropped] = this.#early.splice(index, 1);
    if (dropped) this.#earlyEvents -= dropped.append.events.length;
  }

  /** Applies `append` if it is next in the feed; whether it is no longer waiting (applied, or passed by the feed). */
  async #applyOwnAt(stream: StreamId, append: OwnAppend): Promise<boolean> {
    const { events, position, revision } = append;
    if (position <= this.#lastPosition) return true;
    if (position - this.#lastPosition !== events.length) return false;
    if (this.#takeState(stream, append)) {
      this.#appliedOwn(events.length);
      return true;
    }
    // Not the store's commit time (an append does not return it): no projected reducer reads `recordedAt`, and one
    // that did would have to take this service's own appends from the feed instead.
    const recordedAt = append.decidedAt.toISOString();
    const first = revision - events.length + 1;
    for (const [index, event] of events.entries()) {
      const record: RecordedEvent = {
        type: event.type,
        data: event.data,
        streamId: stream,
        schemaVersion: event.schemaVersion ?? 1,
        revision: first + index,
        position: this.#lastPosition + 1,
        recordedAt,
      };
      await this.#apply(record);
    }
    this.#appliedOwn(events.length);
    return true;
  }

  /**
   * Takes the state the writer folded for `append` when the writer decided on the very history the projection
   * holds: the same fold the projection would make of the same events, without parsing and applying them again.
   * The proof is the position of the last event folded on both sides, not the revision alone: a writer's cached
   * state of a stream another process deleted and wrote again up to the same revision has the old positions.
   * Session streams only (the catalog is appended with event ids, and nothing else is projected).
   */
  #takeState(stream: StreamId, append: OwnAppend): boolean {
    const { events, revision, position } = append;
    const last = events[events.length - 1];
    if (!last || !stream.startsWith(SESSION_STREAM_PREFIX) || sessionIdOfStream(stream) === undefined) return false;
    const base = revision - events.length;
    const previous = this.#sessions.get(stream);
    const sameHistory =
      previous === undefined
        ? base === 0 && append.basePosition === undefined
        : previous.revision === base && append.basePosition !== undefined && append.basePosition === this.#lastApplied.get(stream);
    if (!sameHistory) return false;
    this.#replaceSession(stream, previous, { revision, state: withoutLog(append.state as SessionStreamState) }, position);
    this.#lastPosition = position;
    this.#last = { position, streamId: stream, revision, type: last.type };
    return true;
  }

  /**
   * Puts `next` in place of `previous` (removing the session when `next` is undefined), with its command index and
   * the feed position of the last event its state folds (`lastEvent`, when known).
   */
  #replaceSession(
    stream: StreamId,
    previous: ProjectedStream<SessionStreamState> | undefined,
    next: ProjectedStream<SessionStreamState> | undefined,
    lastEvent: number | undefined,
  ): void {
    this.#unindex(stream, previous, next);
    if (next) this.#sessions.set(stream, next);
    else this.#sessions.delete(stream);
    this.#index(stream, previous, next);
    this.#startKeys.update(stream, next?.state);
    if (next && lastEvent !== undefined) this.#lastApplied.set(stream, lastEvent);
    else this.#lastApplied.delete(stream);
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
    if (this.#early.length > 0) await this.#retryEarly();
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
      // A snapshot, or a fold after a gap, ends at no event this record names: the last position is then unknown.
      const ends = record.type !== SNAPSHOT_RECORD && next?.revision === record.revision ? record.position : undefined;
      if (next !== previous) this.#replaceSession(stream, previous, next, ends);
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

/** This service's appends kept while an earlier one is still to be applied. */
const MAX_EARLY = 64;
/** ...and at most this many events in all. */
const MAX_EARLY_EVENTS = 1024;

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
