import { InvalidInputError } from '../kernel/errors.js';
import { cloneJson, type JsonValue } from '../kernel/json.js';
import type { EventStore, StreamId } from '../kernel/port.js';
import { DEFAULT_CONTROL_STATE_KEYS } from './control-state.js';
import {
  buildCompletionReceipt,
  decideAppendTranscript,
  decideCancelCommand,
  decideCheckpoint,
  decideClaimCommand,
  decideComplete,
  decideCompleteCommand,
  decideCompleteIngress,
  decideEnqueue,
  decideFailIngress,
  decideRecordCompletion,
  decideRegister,
  decideReleaseInterruptedIngress,
  decideRequestIngress,
  decideRetryIngress,
  decideStartIngress,
  decideStop,
  findCommand,
  type Decision,
  type DecisionOptions,
} from './decisions.js';
import { dataCheckOf, nextData, type DataValidator } from './data.js';
import { SessionHistoryError, messages } from './errors.js';
import type { CatalogEvent, SessionEvent, StartKeyEvent } from './events.js';
import { sessionIdOfStream, sessionStream } from './ids.js';
import {
  commandIdSchema,
  inputSchemas,
  parseInput,
  pendingIdSchema,
  sessionIdSchema,
  type AppendTranscriptInput,
  type CheckpointInput,
  type ClaimCommandInput,
  type CommandOutcomeInput,
  type ExpectedVersionInput,
  type IngressFailureInput,
  type ListOptionsInput,
  type NewCommandInput,
  type NewObjectInput,
  type RecordCompletionInput,
  type RegisterSessionInput,
  type RetryIngressInput,
  type StartIngressInput,
  type StartSessionInput,
} from './inputs.js';
import type { CatalogState, LogEntry, SessionCommand, SessionRecord, SessionStreamState, SessionSummary, StartKeyState } from './model.js';
import { SessionProjection } from './projection.js';
import { ProjectionCheckpoints, checkpointPolicy, type CheckpointPolicy } from './projection-checkpoints.js';
import { ProjectionFollower } from './projection-follower.js';
import { listPage, type ListQueryInput, type SessionPage } from './list-query.js';
import { BackgroundCompaction, compactionPolicy, type CompactionPolicy } from './compaction.js';
import { OpenCompactionSweep } from './open-compaction.js';
import { ingressPolicy, type IngressPolicy } from './ingress-policy.js';
import { CompletionSteps } from './completion.js';
import { SessionObjects } from './objects.js';
import { refusingWrites } from './read-only.js';
import { SessionStarts } from './starts.js';
import { ingressStops, observerOf, storageFailureReporter, type SessionHistoryObserver } from './observer.js';
import { BackOff, DEFAULT_RETRY_POLICY, StreamWriter, type WriterHooks } from './stream-writer.js';
import { applyCatalogEvent, applySessionEvent, applyStartKeyEvent, catalogReducer, logEntry, sessionReducer, startKeyReducer } from './reducer.js';
import { materialise, receiptRecord, type StoredObject } from './view.js';

/** Options of `openSessionHistory`; `S` is the type of the application's `data`. */
export interface SessionHistoryOptions<S = JsonValue> {
  /** Where the sessions live; the service never closes it (its opener does). */
  store: EventStore;
  /**
   * Checks the application's `data` on every write that gives it (`invalid_request` naming the field when refused):
   * a Standard Schema such as a zod schema, or a function that throws on invalid data. Data is stored exactly as
   * given and not checked again on read. It also types `data` in records.
   */
  validateData?: DataValidator<S>;
  /**
   * What `complete` does with a session (default `keep`): `keep` leaves the completed session readable through `get`
   * and listed under its id, closed to writes, until `deleteSession`; a session object is optional and, when named,
   * its receipt goes to the catalog. `archive-and-delete` puts the receipt (a session object is required) in the
   * catalog and deletes the session's stream. The choice is recorded in the completion, so a session completed
   * under one policy is treated by it whatever a later service is opened with.
   */
  completion?: 'keep' | 'archive-and-delete';
  /**
   * What a `state` with a key outside the control-state whitelist gets (default `strict`): refused with
   * `invalid_request` naming the key (the view's keys passed back are ignored); `project` drops such keys silently.
   */
  controlState?: 'strict' | 'project';
  /** Source of every time the service records (default: the system clock). */
  clock?: () => Date;
  /**
   * Source of the jitter in the back-off between attempts of a write that another process changed
   * concurrently: a function returning a number in [0, 1), like `Math.random` (the default). Only waiting
   * times come from it; nothing the service records is random (ids are derived by name).
   */
  random?: () => number;
  /** The control-state whitelist (default `DEFAULT_CONTROL_STATE_KEYS`). */
  controlStateKeys?: readonly string[];
  /**
   * Compaction on its own (default `DEFAULT_COMPACTION_POLICY`: every 1,000 events, keeping 100): after a call
   * leaves a session stream with more than `everyEvents` events beyond its snapshot, the service compacts it in
   * the background, keeping the newest `keepEvents` as events. `false` leaves compaction to the application.
   */
  compaction?: CompactionPolicy | false;
  /**
   * The ingress retry loop (default `DEFAULT_INGRESS_POLICY`; any field left out keeps its default): when a
   * failure is terminal, when the next attempt is due, how many failures a session keeps. Events record what was
   * decided, so sessions failed under another policy keep their recorded attempts and times.
   */
  ingressPolicy?: Partial<IngressPolicy>;
  /**
   * Checkpoints of the cross-session projection in the store's checkpoint slot (`store.checkpoints`; a store
   * without one rebuilds the projection from the whole feed at every open). Default `DEFAULT_CHECKPOINT_POLICY`:
   * saved in the background every 1,000 changes applied (or every twice as many changes as there are sessions,
   * when more) and at `close()`; loaded at open, which then reads only the feed after it. A checkpoint that is missing,
   * damaged, of another version or store, or ahead of the store's feed is ignored and the projection rebuilt.
   * `false` neither loads nor saves.
   */
  checkpoints?: CheckpointPolicy | false;
  /**
   * Whether the projection follows the store's change feed in the background (for stores with `follow`), so
   * another process's writes reach it without a call; queries still catch up as before. Default: true, but false
   * with `readOnly`, which mostly serves short looks (following a read-only file-store view opens views of the
   * whole store): pass `follow: true` to keep a long-lived read-only view live.
   */
  follow?: boolean;
  /** Hooks for the application's logger and metrics (appends, compactions, conflicts, catch-ups, checkpoints); none by default. */
  observer?: SessionHistoryObserver;
  /**
   * Only look: finish no interrupted completion on open and write nothing; every method that would write
   * rejects with `invalid_request`. For inspecting a store beside its running writer (e.g. a read-only view).
   */
  readOnly?: boolean;
}

/** A value and whether this call created it (false: an earlier call with the same idempotency id did). */
export interface Created<T> {
  value: T;
  created: boolean;
}

/**
 * Sessions with an optimistic lifecycle, a per-session command queue, a transcript and staged objects,
 * kept as events in an `EventStore`. Every method rejects only with `SessionHistoryError`.
 */
export interface SessionHistory<S = JsonValue> {
  /** Starts a session, or returns the live one an earlier start with the same `idempotencyId` created or whose state carries that key. */
  start(input: StartSessionInput<S>): Promise<Created<SessionRecord<S>>>;
  /** Registers a session under a caller-chosen UUID; `state_conflict` if it is already registered. */
  register(input: RegisterSessionInput<S>): Promise<SessionRecord<S>>;
  /** Summaries of every session and every completion receipt not kept as a session, most recently updated first. */
  list(options?: ListOptionsInput): Promise<SessionSummary[]>;
  /** One page of the sessions and receipts `list` returns, filtered by phase, type or search, sorted by one column. */
  listPage(query?: ListQueryInput): Promise<SessionPage>;
  /** A session with its materialised view and data, or a completed one by its session object id. */
  get(id: string): Promise<SessionRecord<S>>;
  /** Queues a command on an active session; idempotent per session by `idempotencyId`. */
  enqueue(id: string, input: NewCommandInput): Promise<Created<SessionCommand>>;
  /**
   * The next open command of every session that has one, in enqueue order: by `createdAt`, then by the order
   * this service decided the enqueues in (`enqueueOrder`), then by session id.
   */
  commandHeads(): Promise<SessionCommand[]>;
  /**
   * Marks a command as processing (again: no change); `state_conflict` once it is complete. With `{ worker, leaseMs }`
   * the claim is exclusive: `state_conflict` while another worker's lease runs, a renewal for the same worker, a
   * takeover once the lease has run out. The command shows `worker` and `leaseUntil`.
   */
  claimCommand(commandId: string, claim?: ClaimCommandInput): Promise<SessionCommand>;
  /** Completes a claimed command with its outcome (again: no change); with `worker`, `state_conflict` if another worker took it over. */
  completeCommand(commandId: string, input?: CommandOutcomeInput): Promise<SessionCommand>;
  /** Asks the worker of an open command to stop (sets `cancelRequested`). */
  cancelCommand(commandId: string): Promise<SessionCommand>;
  /** Stops a session at whatever version it is: ingress_pending, open commands asked to cancel. */
  stop(id: string): Promise<SessionRecord<S>>;
  /** Appends a line to the session log; returns the new entry. */
  appendTranscript(id: string, input: AppendTranscriptInput): Promise<LogEntry>;
  /** Stores an object's bytes for an active, idle session; returns its id `pending:N`. */
  stageObject(id: string, input: NewObjectInput): Promise<string>;
  /** A staged object with a header-safe file name and media type. */
  object(id: string, pendingId: string): Promise<StoredObject>;
  /**
   * At the expected version, replaces the control state with `state` and the application's data with `data`
   * (each only when given: a `state` replaces the whole control state, it is not merged).
   */
  checkpoint(id: string, input: CheckpointInput<S>): Promise<SessionRecord<S>>;
  /** Checkpoints and moves to ingress_pending. */
  requestIngress(id: string, input: CheckpointInput<S>): Promise<SessionRecord<S>>;
  /** Moves to ingress_in_progress under a provenance id. */
  startIngress(id: string, input: StartIngressInput): Promise<SessionRecord<S>>;
  /** Completes the session with its current control state. */
  completeIngress(id: string, input: ExpectedVersionInput): Promise<SessionRecord<S>>;
  /** Records a failed attempt: back-off, or ingress_failed at the policy's limit (or on `input_too_large`); see `IngressPolicy`. */
  failIngress(id: string, input: IngressFailureInput): Promise<SessionRecord<S>>;
  /** Sends a failed ingress back to ingress_pending with a fresh failure count. */
  retryIngress(id: string, input: RetryIngressInput<S>): Promise<SessionRecord<S>>;
  /** Releases every attempt left in progress back to ingress_pending; returns their session ids. */
  releaseInterruptedIngress(): Promise<string[]>;
  /**
   * Completes the session. Under the `keep` policy it stays readable and closed to writes (a receipt goes to the
   * catalog when a session object is named); under `archive-and-delete` its receipt goes to the catalog, then its
   * stream is deleted. Either way its start key is released: a start with it begins a new session.
   */
  complete(id: string, input: CheckpointInput<S>): Promise<SessionRecord<S>>;
  /** Records a session committed elsewhere (receipts unique by `sessionObjectId`) and completes the named session under the completion policy. */
  recordCompletion(input: RecordCompletionInput): Promise<void>;
  /**
   * Deletes a completed session's stream (`state_conflict` if it is not complete), leaving the deletion mark that
   * keeps its id from ever coming back; its receipt, if any, stays in the catalog.
   */
  deleteSession(id: string): Promise<void>;
  /** Resolves when the store answers. */
  health(): Promise<void>;
  /** Stops the service; later calls reject. The store stays open. */
  close(): Promise<void>;
  /** `close()`, for `await using` (the store stays open: declare it before the service, so it closes after). */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Opens the service on `store`: builds the cross-session projection from its checkpoint and the change feed after
 * it (the whole feed without one) and finishes any completion a crash interrupted (receipt recorded, start key
 * released, stream deleted).
 */
export async function openSessionHistory<S = JsonValue>(options: SessionHistoryOptions<S>): Promise<SessionHistory<S>> {
  if (typeof options !== 'object' || options === null || typeof options.store?.append !== 'function') {
    throw SessionHistoryError.invalid('store: expected an EventStore', 'store');
  }
  if (options.clock !== undefined && typeof options.clock !== 'function')
    throw SessionHistoryError.invalid('clock: expected a function returning a Date', 'clock');
  if (options.random !== undefined && typeof options.random !== 'function')
    throw SessionHistoryError.invalid('random: expected a function returning a number in [0, 1)', 'random');
  const keyList: unknown = options.controlStateKeys;
  if (keyList !== undefined && (!Array.isArray(keyList) || keyList.some((key) => typeof key !== 'string' || key === '__proto__'))) {
    throw SessionHistoryError.invalid('controlStateKeys: expected an array of key names', 'controlStateKeys');
  }
  const store = options.store;
  const clock = options.clock ?? (() => new Date());
  const compaction = compactionPolicy(options.compaction);
  const observe = observerOf(options.observer);
  const keys = Object.freeze([...(options.controlStateKeys ?? DEFAULT_CONTROL_STATE_KEYS)]);
  if (options.completion !== undefined && options.completion !== 'keep' && options.completion !== 'archive-and-delete')
    throw SessionHistoryError.invalid("completion: expected 'keep' or 'archive-and-delete'", 'completion');
  if (options.controlState !== undefined && options.controlState !== 'strict' && options.controlState !== 'project')
    throw SessionHistoryError.invalid("controlState: expected 'strict' or 'project'", 'controlState');
  const checkData = dataCheckOf(options.validateData);
  const decisionOptions: DecisionOptions = {
    controlStateKeys: keys,
    ingressPolicy: ingressPolicy(options.ingressPolicy),
    controlState: options.controlState ?? 'strict',
    completion: options.completion ?? 'keep',
    checkData,
  };
  if (options.follow !== undefined && typeof options.follow !== 'boolean') throw SessionHistoryError.invalid('follow: expected a boolean', 'follow');
  const readOnly = options.readOnly === true;
  const checkpointing = checkpointPolicy(options.checkpoints);
  const projection = new SessionProjection(
    store,
    (catchUp) => {
      observe('projectionCaughtUp', catchUp);
      checkpoints?.applied(catchUp.changes);
    },
    (changes) => checkpoints?.applied(changes),
  );
  const slot = store.checkpoints;
  const checkpoints =
    checkpointing && slot
      ? new ProjectionCheckpoints(store, slot, projection, {
          policy: checkpointing,
          writable: !readOnly,
          report: {
            loaded: (load) => observe('checkpointLoaded', load),
            ignored: (ignored) => observe('checkpointIgnored', ignored),
            saved: (save) => observe('checkpointSaved', save),
          },
        })
      : undefined;
  let follower: ProjectionFollower | undefined;
  let closed = false;
  const reportStorageFailure = storageFailureReporter(observe);

  const translate = (error: unknown): SessionHistoryError => {
    if (error instanceof SessionHistoryError) return reportStorageFailure(error);
    if (error instanceof InvalidInputError) return SessionHistoryError.invalid(`Session History refused the input: ${error.message}`, error.field);
    return reportStorageFailure(SessionHistoryError.internal(error));
  };

  const run = async <T>(operation: () => Promise<T>): Promise<T> => {
    if (closed) throw SessionHistoryError.invalid(messages.closed);
    try {
      return await operation();
    } catch (error) {
      throw translate(error);
    }
  };

  const now = (): Date => {
    const value = clock();
    if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new TypeError('the clock returned an invalid Date');
    return value;
  };

  // One back-off for every writer; each writer queues the writes of a stream so this process never races itself.
  const backOff = new BackOff(DEFAULT_RETRY_POLICY, options.random ?? Math.random);
  const hooks: WriterHooks = {
    appended: (stream, { revision, events, decisions, durationMs }) => observe('appendCommitted', { stream, revision, events, calls: decisions, durationMs }),
    conflicted: (stream, attempt) => observe('conflictRetried', { stream, attempt }),
    // The projection takes this service's own appends as they commit, instead of reading them back from the feed.
    recorded: (stream, append) => projection.applyOwn(stream, append),
  };
  let compactor: BackgroundCompaction | undefined;
  const sessions = new StreamWriter<SessionStreamState, SessionEvent>({
    store,
    reducer: sessionReducer,
    evolve: applySessionEvent,
    now,
    backOff,
    hooks: {
      ...hooks,
      appended: (stream, append) => {
        hooks.appended?.(stream, append);
        compactor?.written(stream, append.revision);
      },
    },
  });
  if (compaction) compactor = new BackgroundCompaction(store, { sessions, projection }, compaction, (done) => observe('compaction', done));
  const startKeys = new StreamWriter<StartKeyState, StartKeyEvent>({ store, reducer: startKeyReducer, evolve: applyStartKeyEvent, now, backOff, hooks });
  const catalog = new StreamWriter<CatalogState, CatalogEvent>({
    store,
    reducer: catalogReducer,
    evolve: applyCatalogEvent,
    now,
    backOff,
    cacheSize: 1,
    hooks,
  });
  const completions = new CompletionSteps(store, { sessions, keys: startKeys, catalog });
  const starts = new SessionStarts({ sessions, keys: startKeys }, backOff.attempts, async (key) => {
    await projection.catchUp();
    return projection.liveSessionsCarrying(key);
  });
  const objects = new SessionObjects(store, sessions);

  // Exact within this process: every enqueue decided here gets a number above every one decided or seen before.
  let lastEnqueueOrder = 0;
  const nextEnqueueOrder = (): number => {
    lastEnqueueOrder = Math.max(lastEnqueueOrder, projection.highestEnqueueOrder()) + 1;
    projection.noteEnqueueOrder(lastEnqueueOrder);
    return lastEnqueueOrder;
  };

  const fold = (stream: StreamId) => sessions.load(stream);
  const mutate = (stream: StreamId, decide: (state: SessionStreamState, at: Date) => Decision) => sessions.mutate(stream, decide);

  const streamOf = (id: unknown): StreamId => sessionStream(parseInput(sessionIdSchema, id, 'id'));

  const recordOf = (state: SessionStreamState): SessionRecord<S> => {
    if (!state.record) throw SessionHistoryError.notFound();
    return materialise<S>(state.record, state);
  };

  const commandOf = (state: SessionStreamState, commandId: string): SessionCommand => {
    const command = findCommand(state, commandId);
    if (!command) throw SessionHistoryError.notFound();
    return cloneJson(command);
  };

  /** The mutation of a session named by the caller, returning the materialised record. */
  const change = async (id: string, decide: (state: SessionStreamState, at: Date) => Decision): Promise<SessionRecord<S>> => {
    const stream = streamOf(id);
    return run(async () => recordOf((await mutate(stream, decide)).state));
  };

  /** The mutation of a command found through the projection. */
  const changeCommand = async (commandId: unknown, decide: (state: SessionStreamState, id: string, at: Date) => Decision): Promise<SessionCommand> => {
    const id = parseInput(commandIdSchema, commandId, 'commandId');
    return run(async () => {
      // A command's session never changes, so a known one needs no catch-up; an unknown one may be another process's.
      let stream = projection.streamOfCommand(id);
      if (!stream) {
        await projection.catchUp();
        stream = projection.streamOfCommand(id);
      }
      if (!stream) throw SessionHistoryError.notFound();
      // A kept completed session no longer changes, its commands included.
      const result = await mutate(stream, (state, at) =>
        state.kept && state.record?.phase === 'complete' ? SessionHistoryError.conflict(messages.sessionComplete) : decide(state, id, at),
      );
      return commandOf(result.state, id);
    });
  };

  const sync = <T>(operation: () => T): Promise<T> => {
    try {
      return Promise.resolve(operation());
    } catch (error) {
      return Promise.reject(translate(error));
    }
  };

  await run(async () => {
    await checkpoints?.load();
    await projection.catchUp();
    if (readOnly) return;
    // A kept session needs finishing only until its receipt is in the catalog (its start key is released by the next
    // start that finds it complete), so opening does not visit every session ever kept.
    const receipts = new Set(projection.catalog().state.receipts.map((receipt) => receipt.sessionObjectId));
    for (const [stream, { state }] of projection.sessionsInPhase('complete')) {
      if (state.kept !== true || (state.receipt !== null && !receipts.has(state.receipt.sessionObjectId))) await completions.finish(stream);
    }
  });
  const sweep =
    compaction && compactor && !readOnly
      ? new OpenCompactionSweep(store, compactor, compaction, (error, cause) => observe('storageFailed', { error, cause, source: 'open-compaction' }))
      : undefined;
  sweep?.start();
  const follow = store.follow;
  if ((options.follow ?? !readOnly) && typeof follow === 'function') {
    follower = new ProjectionFollower(
      (followOptions) => follow.call(store, followOptions),
      projection,
      (error) => observe('followFailed', { error }),
    );
  }

  const service: SessionHistory<S> = {
    start: (input) =>
      sync(() => {
        const parsed = parseInput(inputSchemas.start, input, '');
        // A start's data is a value, so it is checked here, once, before any stream is touched.
        const data = nextData(parsed.data, null, checkData);
        if (data instanceof SessionHistoryError) throw data;
        return { ...parsed, data };
      }).then((parsed) =>
        run(async () => {
          const result = await starts.start(parsed);
          return { value: recordOf(result.state), created: result.created };
        }),
      ),

    register: (input) =>
      sync(() => parseInput(inputSchemas.register, input, '')).then((parsed) =>
        run(async () => recordOf((await mutate(sessionStream(parsed.id), (state, at) => decideRegister(state, parsed, at, decisionOptions))).state)),
      ),

    list: (listOptions) =>
      sync(() => parseInput(inputSchemas.list, listOptions, 'options')).then(({ phase, orderBy }) =>
        run(async () => {
          await projection.catchUp();
          return projection.list(phase, orderBy);
        }),
      ),

    listPage: (query) =>
      sync(() => parseInput(inputSchemas.listPage, query, 'query')).then((parsed) =>
        run(async () => {
          await projection.catchUp();
          return listPage(projection.listSource(), parsed);
        }),
      ),

    get: (id) =>
      run(async () => {
        await projection.catchUp();
        const receipt = projection.catalog().state.receipts.find((candidate) => candidate.sessionObjectId === id);
        if (receipt) {
          // A kept session is its own best record; the receipt alone stands for one whose stream was deleted.
          const kept = projection.keptStreamOf(id);
          const folded = kept === undefined ? undefined : (await fold(kept)).state;
          return folded?.record ? recordOf(folded) : receiptRecord<S>(receipt, false);
        }
        return recordOf((await fold(streamOf(id))).state);
      }),

    enqueue: (id, input) =>
      sync(() => ({ stream: streamOf(id), parsed: parseInput(inputSchemas.enqueue, input, '') })).then(({ stream, parsed }) =>
        run(async () => {
          // One number per call, taken only by a decision that creates the command: a decision made again (after a
          // refusal on the state this process held, or a lost race) keeps it, so no number is noted that no event holds.
          let order: number | undefined;
          const orderOfCall = () => (order ??= nextEnqueueOrder());
          const result = await mutate(stream, (state, at) => decideEnqueue(state, parsed, at, orderOfCall));
          const command = result.state.commands.find((candidate) => candidate.idempotencyId === parsed.idempotencyId);
          if (!command) throw SessionHistoryError.notFound();
          projection.noteCommand(command.id, stream);
          return { value: cloneJson(command), created: result.events.length > 0 };
        }),
      ),

    commandHeads: () =>
      run(async () => {
        await projection.catchUp();
        return projection.commandHeads();
      }),

    claimCommand: (commandId, claim) =>
      sync(() => (claim === undefined ? undefined : parseInput(inputSchemas.claimCommand, claim, ''))).then((parsed) =>
        changeCommand(commandId, (state, id, at) => decideClaimCommand(state, id, at, parsed)),
      ),

    completeCommand: (commandId, input) =>
      sync(() => parseInput(inputSchemas.completeCommand, input ?? {}, '')).then(({ outcome, worker }) =>
        changeCommand(commandId, (state, id, at) => decideCompleteCommand(state, id, outcome, at, worker)),
      ),

    cancelCommand: (commandId) => changeCommand(commandId, decideCancelCommand),

    stop: (id) => change(id, (state, at) => decideStop(state, at)),

    appendTranscript: (id, input) =>
      sync(() => ({ stream: streamOf(id), parsed: parseInput(inputSchemas.appendTranscript, input, '') })).then(({ stream, parsed }) =>
        run(async () => {
          const result = await mutate(stream, (state, at) => decideAppendTranscript(state, parsed, at));
          return cloneJson(logEntry(result.state, result.state.logSize) as LogEntry);
        }),
      ),

    stageObject: (id, input) =>
      sync(() => ({ stream: streamOf(id), parsed: parseInput(inputSchemas.stageObject, input, '') })).then(({ stream, parsed }) =>
        run(() => objects.stage(stream, parsed)),
      ),

    object: (id, pendingId) =>
      sync(() => {
        const position = parseInput(pendingIdSchema, pendingId, 'pendingId');
        return { position, stream: streamOf(id) };
      }).then(({ position, stream }) => run(() => objects.read(stream, position))),

    checkpoint: (id, input) =>
      sync(() => parseInput(inputSchemas.checkpoint, input, '')).then((parsed) =>
        change(id, (state, at) => decideCheckpoint(state, parsed, at, decisionOptions)),
      ),

    requestIngress: (id, input) =>
      sync(() => parseInput(inputSchemas.checkpoint, input, '')).then((parsed) =>
        change(id, (state, at) => decideRequestIngress(state, parsed, at, decisionOptions)),
      ),

    startIngress: (id, input) =>
      sync(() => parseInput(inputSchemas.startIngress, input, '')).then((parsed) => change(id, (state, at) => decideStartIngress(state, parsed, at))),

    completeIngress: (id, input) =>
      sync(() => ({ stream: streamOf(id), parsed: parseInput(inputSchemas.completeIngress, input, '') })).then(({ stream, parsed }) =>
        completeWith(stream, (state, at) => decideCompleteIngress(state, parsed, at, decisionOptions)),
      ),

    failIngress: (id, input) =>
      sync(() => parseInput(inputSchemas.failIngress, input, '')).then((parsed) =>
        run(async () => {
          const result = await mutate(streamOf(id), (state, at) => decideFailIngress(state, parsed, at, decisionOptions));
          for (const stopped of ingressStops(result.state.sessionId, result.events)) observe('ingressStopped', stopped);
          return recordOf(result.state);
        }),
      ),

    retryIngress: (id, input) =>
      sync(() => parseInput(inputSchemas.retryIngress, input, '')).then((parsed) =>
        change(id, (state, at) => decideRetryIngress(state, parsed, at, decisionOptions)),
      ),

    releaseInterruptedIngress: () =>
      run(async () => {
        await projection.catchUp();
        const released: string[] = [];
        for (const [stream] of projection.sessionsInPhase('ingress_in_progress')) {
          const result = await mutate(stream, (state, at) => decideReleaseInterruptedIngress(state, at, decisionOptions));
          if (result.events.length > 0) released.push(sessionIdOfStream(stream) ?? stream);
        }
        return released;
      }),

    complete: (id, input) =>
      sync(() => ({ stream: streamOf(id), parsed: parseInput(inputSchemas.checkpoint, input, '') })).then(({ stream, parsed }) =>
        completeWith(stream, (state, at) => decideComplete(state, parsed, at, decisionOptions)),
      ),

    recordCompletion: (input) =>
      sync(() => parseInput(inputSchemas.recordCompletion, input, '')).then((parsed) =>
        run(async () => {
          const receipt = buildCompletionReceipt(parsed, now());
          if (receipt instanceof SessionHistoryError) throw receipt;
          const stream = parsed.sessionId ? sessionStream(parsed.sessionId) : undefined;
          // The session records its completion first, so a crash before the delete is finished on the next open.
          if (stream) await mutate(stream, (state, at) => decideRecordCompletion(state, receipt, at, decisionOptions));
          await completions.ensureReceipt(receipt);
          if (stream) await completions.finish(stream);
        }),
      ),

    deleteSession: (id) =>
      sync(() => streamOf(id)).then((stream) =>
        run(async () => {
          const { state } = await fold(stream);
          if (!state.record) throw SessionHistoryError.notFound();
          if (state.record.phase !== 'complete') throw SessionHistoryError.conflict(messages.notComplete);
          await completions.finish(stream, { delete: true });
        }),
      ),

    health: () => run(() => projection.catchUp()),

    close: async () => {
      if (closed) return;
      closed = true;
      // Stopped first: the follower's close below may wait for a compaction the sweep asked for.
      const sweeping = sweep?.close();
      if (follower !== undefined) {
        await follower.close();
        // The follow reads in gathered batches, so the last changes may not be applied yet; they are few, and the
        // checkpoint saved below should cover them.
        if (checkpoints !== undefined && !readOnly) await projection.catchUp().catch(() => undefined);
      }
      // Catch-ups asked for by calls still in flight end between two records: what they applied is consistent, and
      // the last checkpoint covers it.
      projection.stop();
      await Promise.all([projection.idle(), sweeping, compactor?.close()]);
      await checkpoints?.close();
    },

    [Symbol.asyncDispose]: () => service.close(),
  };

  async function completeWith(stream: StreamId, decide: (state: SessionStreamState, at: Date) => Decision): Promise<SessionRecord<S>> {
    return run(async () => {
      const result = await mutate(stream, decide);
      const record = recordOf(result.state);
      await completions.finish(stream);
      return record;
    });
  }

  return readOnly ? refusingWrites(service) : service;
}
