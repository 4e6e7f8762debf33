import type { JsonValue } from '../kernel/json.js';
import type { StreamReducer } from '../kernel/fold.js';
import type { EventStore, StreamId } from '../kernel/port.js';
import { BackgroundWork } from './background-work.js';
import { ServiceCalls } from './calls/call.js';
import { commandCalls } from './calls/commands.js';
import { ingressCalls } from './calls/ingress.js';
import { finishInterruptedCompletions, lifecycleCalls } from './calls/lifecycle.js';
import { logCalls } from './calls/log.js';
import type { ServiceParts } from './calls/parts.js';
import { queryCalls } from './calls/queries.js';
import type { CompactionPolicy } from './compaction.js';
import { CompletionSteps } from './completion.js';
import type { DataValidator } from './data.js';
import type { IngressPolicy } from './ingress-policy.js';
import type { AppendTranscriptInput, CheckpointInput, ClaimCommandInput, CommandOutcomeInput, ExpectedVersionInput } from './inputs.js';
import type { IngressFailureInput, ListOptionsInput, NewCommandInput, NewObjectInput, RecordCompletionInput } from './inputs.js';
import type { RegisterSessionInput, RetryIngressInput, StartIngressInput, StartSessionInput } from './inputs.js';
import type { ListQueryInput, SessionPage } from './list-query.js';
import type { LogEntry, SessionCommand, SessionRecord, SessionSummary } from './model.js';
import type { SessionHistoryObserver } from './observer.js';
import type { CheckpointPolicy } from './projection-checkpoints.js';
import { applyCatalogEvent, applySessionEvent, applyStartKeyEvent, catalogReducer, sessionReducer, startKeyReducer } from './reducer.js';
import { serviceSettings } from './service-options.js';
import { SessionStarts } from './starts.js';
import { BackOff, DEFAULT_RETRY_POLICY, StreamWriter, type WriterHooks } from './stream-writer.js';
import type { StoredObject } from './view.js';

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
  /**
   * The keys of a session's state kept as its control state (default: the keys the session-file contract names,
   * `format`, `version`, `sessionId`, `orchestration` and the like; see the core README).
   */
  controlStateKeys?: readonly string[];
  /**
   * Compaction on its own (default `{ everyEvents: 1000, keepEvents: 100 }`): after a call
   * leaves a session stream with more than `everyEvents` events beyond its snapshot, the service compacts it in
   * the background, keeping the newest `keepEvents` as events. `false` leaves compaction to the application.
   */
  compaction?: CompactionPolicy | false;
  /**
   * The ingress retry loop (default `{ failureLimit: 5, retryDelaySeconds: 15, retainedFailures: 5 }`; any field
   * left out keeps its default): when a
   * failure is terminal, when the next attempt is due, how many failures a session keeps. Events record what was
   * decided, so sessions failed under another policy keep their recorded attempts and times.
   */
  ingressPolicy?: Partial<IngressPolicy>;
  /**
   * Checkpoints of the cross-session projection in the store's checkpoint slot (`store.checkpoints`; a store
   * without one rebuilds the projection from the whole feed at every open). Default `{ everyChanges: 1000 }`:
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
  const settings = serviceSettings(options);
  const { store, now, observe, readOnly } = settings;
  const calls = new ServiceCalls(observe, readOnly);
  // One back-off for every writer; each writer queues the writes of a stream so this process never races itself.
  const backOff = new BackOff(DEFAULT_RETRY_POLICY, settings.random);
  const hooksOf = (written?: (stream: StreamId, revision: number) => void): WriterHooks => ({
    appended: (stream, append) => {
      observe('appendCommitted', { stream, ...append });
      written?.(stream, append.revision);
    },
    conflicted: (stream, attempt) => observe('conflictRetried', { stream, attempt }),
  });
  const writer = <State, Event extends { type: string; data: unknown }>(
    reducer: StreamReducer<State>,
    evolve: (state: State, event: Event) => State,
    hooks = hooksOf(),
  ) => new StreamWriter<State, Event>({ store, reducer, evolve, now, backOff, hooks });
  // The background work compacts session streams as writes make them due (the catalog and start keys never).
  const sessions = writer(
    sessionReducer,
    applySessionEvent,
    hooksOf((stream, revision) => background.written(stream, revision)),
  );
  const background = new BackgroundWork(store, sessions, settings, observe);
  const { projection } = background;
  const keys = writer(startKeyReducer, applyStartKeyEvent);
  const catalog = writer(catalogReducer, applyCatalogEvent);
  const completions = new CompletionSteps(store, { sessions, keys, catalog });
  const starts = new SessionStarts({ sessions, keys }, backOff.attempts, async (key) => {
    await projection.catchUp();
    return projection.liveSessionsCarrying(key);
  });
  const parts: ServiceParts = { calls, store, sessions, projection, completions, decisionOptions: settings.decisionOptions };

  await calls.run(async () => {
    await background.open();
    if (!readOnly) await finishInterruptedCompletions(parts);
  });
  background.start();

  const service: SessionHistory<S> = {
    ...lifecycleCalls<S>(parts, starts, now),
    ...commandCalls(parts),
    ...logCalls(parts),
    ...ingressCalls<S>(parts, observe),
    ...queryCalls<S>(parts),
    close: async () => {
      if (calls.close()) await background.close();
    },
    [Symbol.asyncDispose]: () => service.close(),
  };
  return service;
}
