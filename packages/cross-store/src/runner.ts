import {
  compactStream,
  foldStream,
  openSessionHistory,
  type EventStore,
  type JsonObject,
  type SessionHistory,
  type SessionHistoryOptions,
} from '@sessionfold/core';
import {
  CATALOG_STREAM,
  catalogReducer,
  commandIdFor,
  sessionIdForStart,
  sessionReducer,
  sessionStream,
  START_KEY_STREAM_PREFIX,
  startKeyReducer,
} from '@sessionfold/core/session';
import {
  commandKey,
  describeCall,
  OVERSIZE_TEXT_LENGTH,
  startKey,
  type Call,
  type CommandRef,
  type CommandTarget,
  type SessionRef,
  type VersionSkew,
} from './calls.js';
import { causeChain, feedEntry, observe, plain, type FeedEntry, type Outcome } from './observe.js';
import type { StoreSubject } from './subjects.js';

/** The start time every session is started with. */
export const STARTED_AT = '2026-07-23T00:00:00Z';
/** The service clock's first reading; each reading after it is one second later. */
export const CLOCK_START = '2026-07-23T08:00:00.000Z';

/** Session refs the calls use, including the one that is never started. */
export const SESSION_REFS: readonly SessionRef[] = [0, 1, 2, 3];

/** The id the first session started with ref `ref`'s start key gets (as the service derives it). */
export function firstSessionIdOf(ref: SessionRef): string {
  return sessionIdForStart(startKey(ref), 1);
}

/** Service options a runner opens its service with, besides the store and the clock it owns. */
export type ServiceOptions = Omit<SessionHistoryOptions, 'store' | 'clock'>;

/** What one call did on one store: the call, the expected version it resolved to (if any), and its outcome. */
export interface Step {
  call: string;
  expectedVersion?: number;
  /** The command a `head` target resolved to. */
  commandId?: string;
  outcome: Outcome;
  /** The causes under a rejection (store-specific, so never compared): shown when a call fails unexpectedly. */
  cause?: string;
}

/** What the service answers about every session at the end of a run. */
export interface ServiceView {
  list: Outcome;
  commandHeads: Outcome;
  sessions: Outcome[];
}

/** What the store holds at the end of a run: streams, their folded states, blobs and the change feed. */
export interface StoreView {
  streams: { stream: string; revision: number }[];
  folds: Record<string, unknown>;
  blobs: Record<string, string[]>;
  feed: FeedEntry[];
}

/** A clock that starts at `start` and moves one second at every reading. */
export function steppingClock(start = CLOCK_START): () => Date {
  let next = Date.parse(start);
  return () => {
    const value = new Date(next);
    next += 1000;
    return value;
  };
}

/** Drains an async iterable. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const output: T[] = [];
  for await (const item of items) output.push(item);
  return output;
}

/**
 * The session service on one store subject, driven call by call. The clock and id generator belong to the
 * runner and survive reopening, so a sequence makes the same readings on every store.
 */
export class SessionRunner {
  readonly subject: StoreSubject;
  #store: EventStore;
  #history: SessionHistory;
  readonly #clock: () => Date;
  /** The session each ref's start key last started (what its calls address), kept across reopening. */
  readonly #liveIds = new Map<SessionRef, string>();
  /** The last change-feed position `newChanges` has handed out. */
  #seen = 0;

  readonly #options: ServiceOptions;

  private constructor(subject: StoreSubject, store: EventStore, history: SessionHistory, clock: () => Date, options: ServiceOptions) {
    this.subject = subject;
    this.#store = store;
    this.#history = history;
    this.#clock = clock;
    this.#options = options;
  }

  /** Opens `subject`'s store and a service on it (with `options`, kept for every reopening). */
  static async open(subject: StoreSubject, options: ServiceOptions = {}): Promise<SessionRunner> {
    const store = await subject.open();
    const clock = steppingClock();
    try {
      return new SessionRunner(subject, store, await openSessionHistory({ ...options, store, clock }), clock, options);
    } catch (error) {
      await subject.dispose(store);
      throw error;
    }
  }

  /** The store currently open. */
  get store(): EventStore {
    return this.#store;
  }

  /** The service currently open. */
  get history(): SessionHistory {
    return this.#history;
  }

  /** Closes the service and the store, then opens both again on the same data. */
  async reopen(): Promise<void> {
    await this.#history.close();
    this.#store = await this.subject.reopen(this.#store);
    this.#history = await openSessionHistory({ ...this.#options, store: this.#store, clock: this.#clock });
  }

  /** The id of the session ref `ref` stands for: the one its start key last started, else its first. */
  sessionIdOf(ref: SessionRef): string {
    return this.#liveIds.get(ref) ?? firstSessionIdOf(ref);
  }

  /** Makes each session ref stand for the session it stands for in `other` (a store copied from `other`'s). */
  followSessionsOf(other: SessionRunner): void {
    this.#liveIds.clear();
    for (const [ref, id] of other.#liveIds) this.#liveIds.set(ref, id);
  }

  /** The id of command `command` of session ref `session`. */
  commandIdOf(session: SessionRef, command: CommandRef): string {
    return commandIdFor(this.sessionIdOf(session), commandKey(command));
  }

  /** Closes everything and removes the subject's files. */
  async dispose(): Promise<void> {
    await this.#history.close().catch(() => undefined);
    await this.subject.dispose(this.#store);
  }

  /** Runs one call and records what it returned or how it was refused. */
  async perform(call: Call): Promise<Step> {
    const step: Step = { call: describeCall(call), outcome: { ok: null } };
    const history = this.#history;
    const versioned = async (session: SessionRef, skew: VersionSkew): Promise<number> => {
      // A session that cannot be read gets 1 + skew, which reaches the service's own refusal.
      const current = await history.get(this.sessionIdOf(session)).then(
        (record) => record.version,
        () => 1,
      );
      step.expectedVersion = Math.max(0, current + skew);
      return step.expectedVersion;
    };
    const commandOf = async (session: SessionRef, target: CommandTarget): Promise<string> => {
      if (target !== 'head') return this.commandIdOf(session, target);
      // The session's next open command, or its first command's id when it has none open.
      const heads = await history.commandHeads().catch(() => []);
      step.commandId = heads.find((head) => head.sessionId === this.sessionIdOf(session))?.id ?? this.commandIdOf(session, 0);
      return step.commandId;
    };
    step.outcome = await observe(
      async () => {
        switch (call.op) {
          case 'start': {
            const started = await history.start({
              idempotencyId: call.invalid === 'idempotencyId' ? '' : startKey(call.session),
              startedAt: call.invalid === 'startedAt' ? '23 July 2026' : STARTED_AT,
              sessionType: call.sessionType,
              ...(call.sessionType === 'free-time' ? { durationMinutes: 30 } : {}),
            });
            this.#liveIds.set(call.session, started.value.id);
            return started;
          }
          case 'register':
            return history.register({ id: this.sessionIdOf(call.session), startedAt: STARTED_AT, state: call.state });
          case 'get':
            return history.get(this.sessionIdOf(call.session));
          case 'list':
            return history.list(call.phase === null ? undefined : { phase: call.phase });
          case 'commandHeads':
            return history.commandHeads();
          case 'enqueue':
            return history.enqueue(this.sessionIdOf(call.session), { idempotencyId: commandKey(call.command), kind: call.kind, payload: call.payload });
          case 'claimCommand':
            return history.claimCommand(await commandOf(call.session, call.command));
          case 'completeCommand':
            return history.completeCommand(await commandOf(call.session, call.command), { outcome: call.outcome });
          case 'cancelCommand':
            return history.cancelCommand(await commandOf(call.session, call.command));
          case 'stop':
            return history.stop(this.sessionIdOf(call.session));
          case 'checkpoint':
            return history.checkpoint(this.sessionIdOf(call.session), {
              expectedVersion: await versioned(call.session, call.skew),
              state: call.state,
              userActivity: call.userActivity,
            });
          case 'requestIngress':
            return history.requestIngress(this.sessionIdOf(call.session), { expectedVersion: await versioned(call.session, call.skew), state: call.state });
          case 'startIngress':
            return history.startIngress(this.sessionIdOf(call.session), {
              expectedVersion: await versioned(call.session, call.skew),
              provenanceId: call.provenanceId,
            });
          case 'failIngress':
            return history.failIngress(this.sessionIdOf(call.session), {
              expectedVersion: await versioned(call.session, call.skew),
              stage: 'ingest',
              code: call.code,
              message: call.message,
              roundsUsed: 2,
            });
          case 'failedAttempt': {
            const id = this.sessionIdOf(call.session);
            const started = await history.startIngress(id, { expectedVersion: await versioned(call.session, 0), provenanceId: 'prov-attempt' });
            const failed = await history.failIngress(id, { expectedVersion: started.version, stage: 'ingest', code: call.code, message: 'attempt failed' });
            return { started, failed };
          }
          case 'retryIngress':
            return history.retryIngress(this.sessionIdOf(call.session), { expectedVersion: await versioned(call.session, call.skew), state: call.state });
          case 'releaseInterruptedIngress':
            return history.releaseInterruptedIngress();
          case 'completeIngress':
            return history.completeIngress(this.sessionIdOf(call.session), { expectedVersion: await versioned(call.session, call.skew) });
          case 'appendTranscript':
            return history.appendTranscript(this.sessionIdOf(call.session), { role: call.role, text: call.text });
          case 'appendOversize':
            return history.appendTranscript(this.sessionIdOf(call.session), { role: 'user-message', text: 'x'.repeat(OVERSIZE_TEXT_LENGTH) });
          case 'stageObject':
            return history.stageObject(this.sessionIdOf(call.session), {
              fileName: call.fileName,
              mediaType: call.mediaType,
              bytes: Uint8Array.from(call.bytes),
            });
          case 'object':
            return history.object(this.sessionIdOf(call.session), `pending:${call.pending}`);
          case 'complete':
            return history.complete(this.sessionIdOf(call.session), {
              expectedVersion: await versioned(call.session, call.skew),
              state: completionState(call.objectId, call.nested),
            });
          case 'recordCompletion':
            return history.recordCompletion({
              sessionObjectId: call.objectId,
              ...(call.session === null ? {} : { sessionId: this.sessionIdOf(call.session) }),
              sessionType: 'conversation',
            });
          case 'compact':
            return call.stream === 'catalog'
              ? compactStream(this.#store, CATALOG_STREAM, catalogReducer)
              : compactStream(this.#store, sessionStream(this.sessionIdOf(call.stream)), sessionReducer);
          case 'reopen':
            return this.reopen();
        }
      },
      (error) => {
        const cause = causeChain(error);
        if (cause !== '') step.cause = cause;
      },
    );
    return step;
  }

  /**
   * The changes committed since the previous call, read as a live consumer reads them (`readAll` from the
   * position after the last one seen), positions and commit times dropped; and every stream with its revision.
   */
  async newChanges(): Promise<{ changes: FeedEntry[]; streams: { stream: string; revision: number }[] }> {
    const records = await collect(this.#store.readAll({ fromPosition: this.#seen + 1 }));
    for (const record of records) {
      if (record.position <= this.#seen) throw new Error(`${this.subject.name}: readAll from ${this.#seen + 1} returned position ${record.position}`);
      this.#seen = record.position;
    }
    return { changes: records.map(feedEntry), streams: await collect(this.#store.streams()) };
  }

  /** What the service answers now: `list()`, `commandHeads()` and `get()` of every session ref. */
  async serviceView(): Promise<ServiceView> {
    const history = this.#history;
    const sessions: Outcome[] = [];
    for (const ref of SESSION_REFS) sessions.push(await observe(() => history.get(this.sessionIdOf(ref))));
    return { list: await observe(() => history.list()), commandHeads: await observe(() => history.commandHeads()), sessions };
  }

  /** What the store holds now: every stream with its revision, folded state and blobs, and the whole change feed. */
  async storeView(): Promise<StoreView> {
    const store = this.#store;
    const streams = await collect(store.streams());
    const folds: Record<string, unknown> = {};
    const blobs: Record<string, string[]> = {};
    for (const { stream } of streams) {
      folds[stream] = plain(
        stream === CATALOG_STREAM
          ? await foldStream(store, stream, catalogReducer)
          : stream.startsWith(START_KEY_STREAM_PREFIX)
            ? await foldStream(store, stream, startKeyReducer)
            : await foldStream(store, stream, sessionReducer),
      );
      blobs[stream] = await collect(store.blobs(stream));
    }
    const feed = (await collect(store.readAll())).map(feedEntry);
    return { streams, folds, blobs, feed };
  }
}

/** The state a `complete` call hands in: the session object at the top level, inside `historyIngress`, or none. */
export function completionState(objectId: string | null, nested: boolean): JsonObject {
  if (objectId === null) return { sessionType: 'conversation', pendingTurn: false };
  if (!nested) return { sessionObjectId: objectId, pendingTurn: false };
  return {
    sessionType: 'conversation',
    historyIngress: { sessionObjectId: objectId, commitReceipt: { sessionObjectId: objectId, transactionId: `tx-${objectId}` } },
  };
}
