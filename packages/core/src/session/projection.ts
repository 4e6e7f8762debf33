import { foldStream, type StreamReducer } from '../kernel/fold.js';
import { prepareReducer } from '../kernel/versioning.js';
import { DELETED_RECORD, SNAPSHOT_RECORD, type EventStore, type RecordedEvent, type Snapshot, type StreamId } from '../kernel/port.js';
import { CATALOG_STREAM, SESSION_STREAM_PREFIX, sessionIdOfStream } from './ids.js';
import { isOpenCommand } from './decisions.js';
import type { CatalogState, Phase, SessionCommand, SessionRecord, SessionStreamState } from './model.js';
import { catalogReducer, sessionSummaryReducer } from './reducer.js';
import { receiptRecord, summaryRecord } from './view.js';

/** A stream's folded state and the revision it reflects. */
export interface ProjectedStream<S> {
  revision: number;
  state: S;
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
  /** Commands noted since the last catch-up began: the catch-up indexes them (or their deletion). */
  readonly #noted = new Map<string, StreamId>();
  #highestEnqueueOrder = 0;
  #lastPosition = 0;
  #queue: Promise<void> = Promise.resolve();

  readonly #caughtUp: (catchUp: { changes: number; position: number; durationMs: number }) => void;

  /** `caughtUp` hears of every catch-up that applied changes. */
  constructor(store: EventStore, caughtUp: (catchUp: { changes: number; position: number; durationMs: number }) => void = () => undefined) {
    this.#store = store;
    this.#caughtUp = caughtUp;
  }

  /**
   * Applies every change committed since the last call (all of them on the first). Calls are serialised,
   * and each one reads the feed afresh, so it returns only after seeing what was committed before it began.
   */
  catchUp(): Promise<void> {
    const run = this.#queue.then(
      () => this.#readFeed(),
      () => this.#readFeed(),
    );
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

  /** The projected catalog. */
  catalog(): ProjectedStream<CatalogState> {
    return this.#catalog;
  }

  /** Summaries of every live session and every completion receipt (of `phase` only, if given), most recently updated first. */
  list(phase?: Phase): SessionRecord[] {
    const records: SessionRecord[] = [];
    const receipts = this.#catalog.state.receipts;
    const archived = new Set(receipts.map((receipt) => receipt.sessionObjectId));
    for (const [, projected] of this.sessions()) {
      const { record, receipt } = projected.state;
      // A completed stream awaiting deletion is listed through its receipt once that is recorded.
      if (!record || (record.phase === 'complete' && receipt && archived.has(receipt.sessionObjectId))) continue;
      records.push(summaryRecord(record, projected.state));
    }
    for (const receipt of receipts) records.push(receiptRecord(receipt, true));
    const kept = phase === undefined ? records : records.filter((record) => record.phase === phase);
    // A stable sort keeps sessions (by stream name) ahead of receipts when times tie.
    return kept.sort((a, b) => (a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : 0));
  }

  /**
   * The next open command of every session (lowest `sequence`), by `createdAt`, then `enqueueOrder`, then
   * session id: enqueue order, exactly for enqueues one service decided, to the millisecond across services.
   */
  commandHeads(): SessionCommand[] {
    const heads: SessionCommand[] = [];
    for (const [, projected] of this.#sessions) {
      let head: SessionCommand | undefined;
      for (const command of projected.state.commands) {
        if (isOpenCommand(command) && (!head || command.sequence < head.sequence)) head = command;
      }
      if (head) heads.push(structuredClone(head));
    }
    return heads.sort((a, b) => compareText(a.createdAt, b.createdAt) || a.enqueueOrder - b.enqueueOrder || compareText(a.sessionId, b.sessionId));
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
    this.#noted.set(commandId, stream);
  }

  /** The highest `enqueueOrder` of any command seen so far (also of commands gone since). */
  highestEnqueueOrder(): number {
    return this.#highestEnqueueOrder;
  }

  async #readFeed(): Promise<void> {
    const noted = [...this.#noted.keys()];
    const started = performance.now();
    let changes = 0;
    for await (const record of this.#store.readAll({ fromPosition: this.#lastPosition + 1 })) {
      await this.#apply(record);
      this.#lastPosition = record.position;
      changes++;
    }
    for (const commandId of noted) this.#noted.delete(commandId);
    if (changes > 0) this.#caughtUp({ changes, position: this.#lastPosition, durationMs: performance.now() - started });
  }

  async #apply(record: RecordedEvent): Promise<void> {
    const stream = record.streamId;
    if (stream === CATALOG_STREAM) {
      const next = await this.#follow(stream, this.#catalog, catalogReducer, record);
      this.#catalog = next ?? { revision: 0, state: catalogReducer.initial(stream) };
      return;
    }
    if (!stream.startsWith(SESSION_STREAM_PREFIX) || sessionIdOfStream(stream) === undefined) return;
    const previous = this.#sessions.get(stream);
    const next = await this.#follow(stream, previous, sessionSummaryReducer, record);
    if (next === previous) return;
    this.#unindex(stream, previous, next);
    if (next) this.#sessions.set(stream, next);
    else this.#sessions.delete(stream);
    this.#index(stream, previous, next);
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
