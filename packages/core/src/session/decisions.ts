import { cloneJson, type JsonObject, type JsonValue } from '../kernel/json.js';
import { controlState, DEFAULT_CONTROL_STATE_KEYS } from './control-state.js';
import { nextData, type DataCheckFn } from './data.js';
import { SessionHistoryError, messages, namedMessages } from './errors.js';
import { describeZodError, sessionEvent, type CatalogEvent, type SessionEvent, type StartKeyEvent } from './events.js';
import { commandIdFor, sessionIdForStart } from './ids.js';
import type { Checkpoint, ClaimCommand, IngressFailure, NewCommand, RecordCompletion, RegisterSession, StartSession } from './inputs.js';
import { DEFAULT_INGRESS_POLICY, type IngressPolicy } from './ingress-policy.js';
import { isJsonObject } from './json-schema.js';
import {
  completionReceiptSchema,
  type CatalogState,
  type CompletionReceipt,
  type LifecycleRecord,
  type SessionCommand,
  type SessionStreamState,
  type StartKeyState,
  type LogRole,
} from './model.js';

/** What a decision returns: the events to append (none = nothing to do), or why it is refused. */
export type Decision = SessionEvent[] | SessionHistoryError;

/** What `complete` does with the session's stream: keep it (the default), or hand it to the catalog and delete it. */
export type CompletionPolicy = 'keep' | 'archive-and-delete';

/** What a `state` with keys outside the control-state whitelist gets: refused (the default), or silently projected. */
export type ControlStatePolicy = 'strict' | 'project';

/** Options of the decisions: the control-state whitelist and policy, the ingress and completion policies, the data check. */
export interface DecisionOptions {
  /** The control-state whitelist (default `DEFAULT_CONTROL_STATE_KEYS`). */
  controlStateKeys?: readonly string[];
  /** The ingress retry loop's policy (default `DEFAULT_INGRESS_POLICY`). */
  ingressPolicy?: IngressPolicy;
  /** Default `strict`. */
  controlState?: ControlStatePolicy;
  /** Default `keep`. */
  completion?: CompletionPolicy;
  /** The application's check of its data, run on every value a write records. */
  checkData?: DataCheckFn | undefined;
}

/** The keys of the materialised view: rebuilt from the events on every read, ignored when passed back in a `state`. */
export const VIEW_KEYS: ReadonlySet<string> = new Set(['sessionId', 'transcript', 'events', 'transcriptText', 'commands', 'objects']);

// Decisions made in the same millisecond (those of one batch, most of one request) share their time's text.
let lastTime = Number.NaN;
let lastText = '';
const iso = (now: Date): string => {
  const time = now.getTime();
  if (time !== lastTime) {
    lastText = now.toISOString();
    lastTime = time;
  }
  return lastText;
};
const keysOf = (options: DecisionOptions | undefined) => options?.controlStateKeys ?? DEFAULT_CONTROL_STATE_KEYS;
const policyOf = (options: DecisionOptions | undefined) => options?.ingressPolicy ?? DEFAULT_INGRESS_POLICY;

// A completed session no longer changes. Kept, it says so; under the archive policy its stream only waits for its
// deletion (its receipt is what remains), so to callers it is already gone.
function existing(state: SessionStreamState): LifecycleRecord | SessionHistoryError {
  if (!state.record) return SessionHistoryError.notFound();
  if (state.record.phase === 'complete') return state.kept ? SessionHistoryError.conflict(messages.sessionComplete) : SessionHistoryError.notFound();
  return state.record;
}

/**
 * The control state a write records: `given` checked and projected onto the whitelist, or `current` when left out.
 * Under the `strict` policy a key outside the whitelist is refused (view keys passed back are ignored).
 */
function nextControlState(given: JsonObject | undefined, current: JsonObject, options: DecisionOptions | undefined): JsonObject | SessionHistoryError {
  if (given === undefined) return current;
  const keys = keysOf(options);
  if (options?.controlState !== 'project') {
    for (const key of Object.keys(given)) {
      if (keys.includes(key) || VIEW_KEYS.has(key)) continue;
      return SessionHistoryError.invalid(namedMessages.notControlState(key), `state.${key}`);
    }
  }
  return controlState(given, keys);
}

/** The `data` member of an event: present only when the write gives data. */
function dataMember(data: JsonValue | undefined): { data?: JsonValue } {
  return data === undefined ? {} : { data };
}

function versioned(state: SessionStreamState, expectedVersion: number): LifecycleRecord | SessionHistoryError {
  const record = existing(state);
  if (record instanceof SessionHistoryError) return record;
  if (record.version !== expectedVersion) return SessionHistoryError.versionConflict(expectedVersion, record.version);
  return record;
}

/** The command with `commandId`, if the session has it. */
export function findCommand(state: SessionStreamState, commandId: string): SessionCommand | undefined {
  return state.commands.find((command) => command.id === commandId);
}

/** Whether a command still waits for, or is in, processing. */
export function isOpenCommand(command: SessionCommand): boolean {
  return command.status === 'pending' || command.status === 'processing';
}

/** Creates a session for a start request; no events when the stream already holds one. */
export function decideStart(state: SessionStreamState, input: StartSession, now: Date, options?: DecisionOptions): Decision {
  if (state.record) return [];
  const initial: JsonObject = {
    stateVersion: 3,
    sessionId: state.sessionId,
    sessionType: input.sessionType,
    startedAt: input.startedAt,
    startIdempotencyId: input.idempotencyId,
    orchestration: { owner: 'backend', status: 'idle' },
  };
  if (input.sessionType === 'free-time') {
    initial.selfTimeIntent = {
      requestedAt: input.startedAt,
      durationMinutes: input.durationMinutes ?? null,
      customPrompt: input.customPrompt ?? '',
    };
  }
  const data = nextData(input.data, null, options?.checkData);
  if (data instanceof SessionHistoryError) return data;
  return [sessionEvent('SessionStarted', { at: iso(now), startedAt: input.startedAt, state: initial, ...dataMember(data) })];
}

/** Registers a session created elsewhere under its own id; refused when it is already registered. */
export function decideRegister(state: SessionStreamState, input: RegisterSession, now: Date, options?: DecisionOptions): Decision {
  if (state.record) return SessionHistoryError.conflict(messages.alreadyRegistered);
  const control = nextControlState(input.state, {}, options);
  if (control instanceof SessionHistoryError) return control;
  const data = nextData(input.data, null, options?.checkData);
  if (data instanceof SessionHistoryError) return data;
  return [sessionEvent('SessionRegistered', { at: iso(now), startedAt: input.startedAt, state: control, ...dataMember(data) })];
}

/**
 * Queues a command on an active session; no events when a command with the same idempotency id exists.
 * `enqueueOrder` gives the caller's order of this decision among enqueues (on any session); it is asked only when
 * a command is created, so a refusal or a no-op takes no number.
 */
export function decideEnqueue(state: SessionStreamState, input: NewCommand, now: Date, enqueueOrder: () => number = () => 0): Decision {
  const record = existing(state);
  if (record instanceof SessionHistoryError) return record;
  if (record.phase !== 'active') return SessionHistoryError.conflict(messages.noLongerActive);
  if (state.commands.some((command) => command.idempotencyId === input.idempotencyId)) return [];
  const command: SessionCommand = {
    id: commandIdFor(state.sessionId, input.idempotencyId),
    sessionId: state.sessionId,
    sequence: state.commands.reduce((max, candidate) => Math.max(max, candidate.sequence), 0) + 1,
    enqueueOrder: enqueueOrder(),
    kind: input.kind,
    payload: input.payload,
    status: 'pending',
    cancelRequested: false,
    outcome: null,
    createdAt: iso(now),
    processingStartedAt: null,
    completedAt: null,
    idempotencyId: input.idempotencyId,
  };
  return [sessionEvent('CommandEnqueued', { command })];
}

/** The latest instant a `Date` holds (ECMAScript's time value limit). */
const MAX_DATE_MS = 8.64e15;

/**
 * Marks a pending command as processing; claiming a processing command again changes nothing. With a
 * `claim`, the command becomes that worker's until `now + leaseMs`: refused while another worker's lease
 * runs, renewed for the same worker, taken over once the lease has run out (its worker presumably died).
 * A processing command claimed without a worker holds no lease, so a worker may take it.
 */
export function decideClaimCommand(state: SessionStreamState, commandId: string, now: Date, claim?: ClaimCommand): Decision {
  const command = findCommand(state, commandId);
  if (!command) return SessionHistoryError.notFound();
  if (command.status === 'complete') return SessionHistoryError.conflict(messages.commandAlreadyComplete);
  if (!claim) return command.status === 'processing' ? [] : [sessionEvent('CommandClaimed', { at: iso(now), commandId })];
  const held = command.status === 'processing' && command.worker !== undefined && command.worker !== claim.worker;
  if (held && command.leaseUntil !== undefined && Date.parse(command.leaseUntil) > now.getTime()) {
    return SessionHistoryError.conflict(messages.commandClaimedByOther);
  }
  // The lease end is decided here, from the service clock, so a replay never depends on when it runs.
  const end = now.getTime() + claim.leaseMs;
  // Past the latest time a Date holds the lease end cannot be recorded: the caller asked for too long a lease.
  if (end > MAX_DATE_MS) return SessionHistoryError.invalid('leaseMs: the lease would end after the latest time that can be recorded', 'leaseMs');
  const leaseUntil = new Date(end).toISOString();
  return [sessionEvent('CommandClaimed', { at: iso(now), commandId, worker: claim.worker, leaseUntil })];
}

/**
 * Completes a claimed command with its outcome; completing a complete command changes nothing. With a
 * `worker`, refused when another worker claimed the command since (this one lost it after its lease ran out).
 */
export function decideCompleteCommand(state: SessionStreamState, commandId: string, outcome: JsonValue, now: Date, worker?: string): Decision {
  const command = findCommand(state, commandId);
  if (!command) return SessionHistoryError.notFound();
  if (worker !== undefined && command.worker !== undefined && command.worker !== worker) return SessionHistoryError.conflict(messages.commandClaimedByOther);
  if (command.status === 'complete') return [];
  if (command.status !== 'processing') return SessionHistoryError.conflict(messages.commandNotClaimed);
  return [sessionEvent('CommandCompleted', { at: iso(now), commandId, outcome })];
}

/** Asks the worker of an open command to stop; refused for a complete command. */
export function decideCancelCommand(state: SessionStreamState, commandId: string, now: Date): Decision {
  const command = findCommand(state, commandId);
  if (!command) return SessionHistoryError.notFound();
  if (command.status === 'complete') return SessionHistoryError.conflict(messages.commandAlreadyComplete);
  if (command.cancelRequested) return [];
  return [sessionEvent('CommandCancelRequested', { at: iso(now), commandId })];
}

/**
 * Stops a session whatever its version: phase ingress_pending without a provenance, and every open
 * command asked to cancel.
 */
export function decideStop(state: SessionStreamState, now: Date): Decision {
  const record = existing(state);
  if (record instanceof SessionHistoryError) return record;
  const at = iso(now);
  return [
    sessionEvent('IngressRequested', { at, provenanceId: null, nextAttemptAt: record.ingressNextAttemptAt }),
    ...state.commands
      .filter((command) => isOpenCommand(command) && !command.cancelRequested)
      .map((command) => sessionEvent('CommandCancelRequested', { at, commandId: command.id })),
  ];
}

/** Appends a line to the session log. */
export function decideAppendTranscript(state: SessionStreamState, input: { role: Exclude<LogRole, 'pending-object'>; text: string }, now: Date): Decision {
  const record = existing(state);
  if (record instanceof SessionHistoryError) return record;
  return [sessionEvent('TranscriptAppended', { at: iso(now), role: input.role, text: input.text })];
}

/** Why an object may not be staged now, or undefined when it may. */
export function objectStagingRefusal(state: SessionStreamState): SessionHistoryError | undefined {
  const record = existing(state);
  if (record instanceof SessionHistoryError) return record;
  if (record.phase !== 'active') return SessionHistoryError.conflict(messages.objectsNeedActiveSession);
  // Staged objects join the conversation's next turn: one staged while a command runs would land in the middle of it.
  const open = state.commands.find(isOpenCommand);
  if (open) return SessionHistoryError.conflict(namedMessages.objectsWhileCommand(open.id, open.status));
  return undefined;
}

/** Stages an object whose bytes are already stored under `sha256`; its id is `pending:<next log position>`. */
export function decideStageObject(
  state: SessionStreamState,
  input: { fileName?: string | null | undefined; mediaType: string; size: number; sha256: string },
  now: Date,
): Decision {
  const refusal = objectStagingRefusal(state);
  if (refusal) return refusal;
  return [
    sessionEvent('ObjectStaged', {
      at: iso(now),
      pendingId: `pending:${state.logSize + 1}`,
      fileName: input.fileName ?? 'uploaded-object',
      mediaType: input.mediaType,
      size: input.size,
      sha256: input.sha256,
    }),
  ];
}

/** Replaces the control state (when given) and the application's data (when given) at the expected version. */
export function decideCheckpoint(state: SessionStreamState, input: Checkpoint, now: Date, options?: DecisionOptions): Decision {
  const record = versioned(state, input.expectedVersion);
  if (record instanceof SessionHistoryError) return record;
  const control = nextControlState(input.state, record.state, options);
  if (control instanceof SessionHistoryError) return control;
  const data = nextData(input.data, state.data, options?.checkData);
  if (data instanceof SessionHistoryError) return data;
  return [sessionEvent('SessionCheckpointed', { at: iso(now), state: control, userActivity: input.userActivity, ...dataMember(data) })];
}

/** Checkpoints and asks for ingress (phase ingress_pending, no scheduled attempt). */
export function decideRequestIngress(state: SessionStreamState, input: Checkpoint, now: Date, options?: DecisionOptions): Decision {
  const record = versioned(state, input.expectedVersion);
  if (record instanceof SessionHistoryError) return record;
  const control = nextControlState(input.state, record.state, options);
  if (control instanceof SessionHistoryError) return control;
  const data = nextData(input.data, state.data, options?.checkData);
  if (data instanceof SessionHistoryError) return data;
  return [
    sessionEvent('IngressRequested', {
      at: iso(now),
      state: control,
      provenanceId: record.provenanceId,
      nextAttemptAt: null,
      ...dataMember(data),
    }),
  ];
}

/** Starts an ingress attempt under `provenanceId`. */
export function decideStartIngress(state: SessionStreamState, input: { expectedVersion: number; provenanceId: string }, now: Date): Decision {
  const record = versioned(state, input.expectedVersion);
  if (record instanceof SessionHistoryError) return record;
  return [sessionEvent('IngressStarted', { at: iso(now), provenanceId: input.provenanceId })];
}

/**
 * Records a failed attempt as the ingress policy decides it (`IngressPolicy`): terminal at its `failureLimit`-th
 * failure or on `input_too_large`, else due again `retryDelaySeconds` later; `retainedFailures` are kept.
 */
export function decideFailIngress(state: SessionStreamState, input: IngressFailure, now: Date, options?: DecisionOptions): Decision {
  const record = versioned(state, input.expectedVersion);
  if (record instanceof SessionHistoryError) return record;
  if (record.phase !== 'ingress_pending' && record.phase !== 'ingress_in_progress') {
    return SessionHistoryError.conflict(messages.ingressNotActive);
  }
  const at = iso(now);
  const attempt = record.ingressFailureCount + 1;
  const code = input.code ?? null;
  const policy = policyOf(options);
  const terminal = code === 'input_too_large' || attempt >= policy.failureLimit;
  return [
    sessionEvent('IngressFailed', {
      at,
      attempt,
      terminal,
      nextAttemptAt: terminal ? null : new Date(now.getTime() + policy.retryDelaySeconds * 1000).toISOString(),
      failure: {
        attempt,
        at,
        stage: input.stage,
        code,
        message: input.message,
        roundsUsed: input.roundsUsed ?? null,
        contextTokens: input.contextTokens ?? null,
        contextWindowTokens: input.contextWindowTokens ?? null,
      },
      retainedFailures: policy.retainedFailures,
    }),
  ];
}

/** Sends a failed ingress back to ingress_pending with a new control state and a fresh failure count. */
export function decideRetryIngress(
  state: SessionStreamState,
  input: { expectedVersion: number; state?: JsonObject | undefined; data?: unknown },
  now: Date,
  options?: DecisionOptions,
): Decision {
  const record = versioned(state, input.expectedVersion);
  if (record instanceof SessionHistoryError) return record;
  if (record.phase !== 'ingress_failed') return SessionHistoryError.conflict(messages.ingressNotFailed);
  const control = nextControlState(input.state, record.state, options);
  if (control instanceof SessionHistoryError) return control;
  const data = nextData(input.data, state.data, options?.checkData);
  if (data instanceof SessionHistoryError) return data;
  return [sessionEvent('IngressRetried', { at: iso(now), state: control, ...dataMember(data) })];
}

/**
 * Releases an attempt left in progress (its worker is gone) back to ingress_pending, keeping the
 * checkpoint state. A failure count past the policy's limit (a runaway loop) starts again at 0. No events
 * when the session is not in progress.
 */
export function decideReleaseInterruptedIngress(state: SessionStreamState, now: Date, options?: DecisionOptions): Decision {
  const record = state.record;
  if (record?.phase !== 'ingress_in_progress') return [];
  const policy = policyOf(options);
  return [
    sessionEvent('IngressReleased', {
      at: iso(now),
      resetFailureCount: record.ingressFailureCount > policy.failureLimit,
      retainedFailures: policy.retainedFailures,
    }),
  ];
}

/**
 * Completes a session at the expected version. The session object comes from `historyIngress` when it
 * names one, else from the state itself; its commit receipt (or a bare one) is stamped with the
 * session's id, type, start and the completion time. Under the `keep` policy a session object is optional
 * (without one no receipt is made) and the event records that the stream is kept.
 */
export function decideComplete(
  state: SessionStreamState,
  input: { expectedVersion: number; state?: JsonObject | undefined; data?: unknown },
  now: Date,
  options?: DecisionOptions,
): Decision {
  const record = versioned(state, input.expectedVersion);
  if (record instanceof SessionHistoryError) return record;
  const given = input.state ?? record.state;
  const nested = given.historyIngress;
  const completion = isJsonObject(nested) && typeof nested.sessionObjectId === 'string' ? nested : given;
  const next = nextControlState(given, record.state, options);
  if (next instanceof SessionHistoryError) return next;
  const data = nextData(input.data, state.data, options?.checkData);
  if (data instanceof SessionHistoryError) return data;
  const objectId = completion.sessionObjectId;
  const keep = options?.completion !== 'archive-and-delete';
  if (typeof objectId !== 'string') {
    if (!keep) return SessionHistoryError.conflict(messages.noSessionObject);
    return [
      sessionEvent('SessionCompleted', { at: iso(now), state: next === record.state ? cloneJson(next) : next, receipt: null, kept: true, ...dataMember(data) }),
    ];
  }
  const rawReceipt = completion.commitReceipt;
  let receipt: CompletionReceipt;
  if (rawReceipt === undefined || rawReceipt === null) {
    receipt = completionReceiptSchema.parse({ sessionObjectId: objectId });
  } else {
    const parsed = completionReceiptSchema.safeParse(rawReceipt);
    if (!parsed.success) return SessionHistoryError.conflict(`invalid session commit receipt: ${describeZodError(parsed.error)}`);
    receipt = parsed.data;
  }
  if (receipt.sessionObjectId !== objectId) return SessionHistoryError.conflict(messages.receiptNamesOtherObject);
  const at = iso(now);
  const sessionType = next.sessionType;
  receipt = {
    ...receipt,
    sessionId: record.id,
    sessionType: typeof sessionType === 'string' ? sessionType : null,
    createdAt: record.startedAt,
    committedAt: at,
  };
  const recorded = next === record.state ? cloneJson(next) : next;
  recorded.sessionObjectId = objectId;
  recorded.commitReceipt = rawReceipt === undefined ? null : cloneJson(rawReceipt);
  return [sessionEvent('SessionCompleted', { at, state: recorded, receipt, ...(keep ? { kept: true } : {}), ...dataMember(data) })];
}

/** Completes the session with its current control state (the ingress finished). */
export function decideCompleteIngress(state: SessionStreamState, input: { expectedVersion: number }, now: Date, options?: DecisionOptions): Decision {
  const record = existing(state);
  if (record instanceof SessionHistoryError) return record;
  return decideComplete(state, { expectedVersion: input.expectedVersion, state: record.state }, now, options);
}

/**
 * The receipt `recordCompletion` stores: the given one (or a bare one) filled with the request's session
 * id, type and creation time where it has none, and `committedAt` = now when absent.
 */
export function buildCompletionReceipt(input: RecordCompletion, now: Date): CompletionReceipt | SessionHistoryError {
  const receipt = input.commitReceipt ?? completionReceiptSchema.parse({ sessionObjectId: input.sessionObjectId });
  if (receipt.sessionObjectId !== input.sessionObjectId) return SessionHistoryError.conflict(messages.receiptDiffers);
  return {
    ...receipt,
    sessionId: receipt.sessionId ?? input.sessionId ?? null,
    sessionType: receipt.sessionType ?? input.sessionType ?? null,
    createdAt: receipt.createdAt ?? input.createdAt ?? null,
    committedAt: receipt.committedAt ?? iso(now),
  };
}

/**
 * Marks a live session complete because its archive was recorded elsewhere, so the stream can be deleted
 * after the receipt is in the catalog. No events when the session does not exist or is already complete.
 */
export function decideRecordCompletion(state: SessionStreamState, receipt: CompletionReceipt, now: Date, options?: DecisionOptions): Decision {
  const record = state.record;
  if (!record || record.phase === 'complete') return [];
  const next: JsonObject = { ...cloneJson(record.state), sessionObjectId: receipt.sessionObjectId, commitReceipt: cloneJson(receipt) };
  const kept = options?.completion !== 'archive-and-delete' ? { kept: true } : {};
  return [sessionEvent('SessionCompleted', { at: iso(now), state: next, receipt, ...kept })];
}

/** Adds a receipt to the catalog unless its session object is already recorded. */
export function decideRecordReceipt(catalog: CatalogState, receipt: CompletionReceipt): CatalogEvent[] {
  if (catalog.receipts.some((existingReceipt) => existingReceipt.sessionObjectId === receipt.sessionObjectId)) return [];
  return [{ type: 'CompletionRecorded', data: { receipt } }];
}

/**
 * Binds start key `idempotencyId`'s `incarnation`-th session to `sessionId`. No events when that incarnation
 * is bound already or is not the next one: the caller reads the state to learn which session holds it.
 */
export function decideBindStartKey(state: StartKeyState, idempotencyId: string, incarnation: number, sessionId: string, now: Date): StartKeyEvent[] {
  if (state.bindings.length !== incarnation - 1) return [];
  return [{ type: 'StartKeyBound', data: { at: iso(now), idempotencyId, incarnation, sessionId } }];
}

/**
 * Records that the session `sessionId` started by the key has ended, before its stream is deleted, so that no
 * later start derives its id again. A session the key started but never bound (a start interrupted between
 * creating and binding it) is bound first when it is the next incarnation. No events for any other session.
 */
export function decideReleaseStartKey(state: StartKeyState, idempotencyId: string, sessionId: string, now: Date): StartKeyEvent[] {
  const at = iso(now);
  const bound = state.bindings.find((binding) => binding.sessionId === sessionId);
  if (bound) return bound.released ? [] : [{ type: 'StartKeyReleased', data: { at, incarnation: bound.incarnation, sessionId } }];
  const incarnation = state.bindings.length + 1;
  if (sessionIdForStart(idempotencyId, incarnation) !== sessionId) return [];
  return [
    { type: 'StartKeyBound', data: { at, idempotencyId, incarnation, sessionId } },
    { type: 'StartKeyReleased', data: { at, incarnation, sessionId } },
  ];
}
