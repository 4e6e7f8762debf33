import { Immer } from 'immer';
import { CorruptionError } from '../kernel/errors.js';
import { cloneJson, type JsonValue } from '../kernel/json.js';
import type { RecordedEvent, StreamId } from '../kernel/port.js';
import type { StreamReducer } from '../kernel/fold.js';
import { parseCatalogEvent, parseSessionEvent, parseStartKeyEvent, type CatalogEvent, type SessionEvent, type StartKeyEvent } from './events.js';
import { sessionIdOfStream } from './ids.js';
import {
  FIRST_USER_MESSAGE_LIMIT,
  catalogStateSchema,
  newLifecycleRecord,
  sessionStreamStateSchema,
  startKeyStateSchema,
  type CatalogState,
  type IngressFailureEntry,
  type StartKeyState,
  type LifecycleRecord,
  type LogEntry,
  type SessionCommand,
  type SessionStreamState,
} from './model.js';
import { displayText } from './view.js';

// Folded states are copied before they leave the service, so freezing every intermediate state
// (immer's default) would only cost time: it made a 20k-entry replay about ten times slower.
const immer = new Immer({ autoFreeze: false });

/** Entries per log chunk: appending copies at most one chunk plus the (short) list of chunks. */
export const LOG_CHUNK_SIZE = 256;

/** Bumped whenever the folded state's shape changes; snapshots of another version are refused. */
export const SESSION_STATE_SCHEMA_VERSION = 1;
export const CATALOG_STATE_SCHEMA_VERSION = 1;
export const START_KEY_STATE_SCHEMA_VERSION = 1;

/** The state of a session stream before its first event. */
export function initialSessionState(sessionId: string): SessionStreamState {
  return {
    sessionId,
    record: null,
    commands: [],
    log: [],
    logSize: 0,
    firstUserMessage: null,
    receipt: null,
    startKey: null,
    data: null,
    lastActivityAt: null,
    kept: false,
  };
}

/**
 * Applies one parsed event. Pure and total: a well-formed event never throws; one that makes no sense
 * in the current state (a lifecycle change before the session exists, an unknown command) changes nothing.
 * With `keepLog: false` log entries are counted but not kept (the cross-session summaries need no more).
 */
export function applySessionEvent(state: SessionStreamState, event: SessionEvent, options?: { keepLog?: boolean }): SessionStreamState {
  // Log events are by far the most frequent in a replay; sharing the untouched chunks by hand costs a
  // fraction of an immer draft of the log, and they change nothing else.
  if (event.type === 'TranscriptAppended' || event.type === 'ObjectStaged') return appendToLog(state, event, options?.keepLog ?? true);
  // Every other event sets a few fields of the record or of one command: shallow copies of what changes
  // share the rest as an immer draft would, without its proxies and its walk of the result (a service
  // call folds each event it decides, so that walk was a good part of a call's cost).
  switch (event.type) {
    case 'SessionStarted':
    case 'SessionRegistered': {
      if (state.record) return state;
      const record = newLifecycleRecord({
        id: state.sessionId,
        phase: 'active',
        startedAt: event.data.startedAt,
        updatedAt: event.data.startedAt,
        state: event.data.state,
      });
      const key = event.data.state.startIdempotencyId;
      const data = event.data.data ?? null;
      const lastActivityAt = event.data.startedAt;
      return event.type === 'SessionStarted' && typeof key === 'string'
        ? { ...state, record, startKey: key, data, lastActivityAt }
        : { ...state, record, data, lastActivityAt };
    }
    case 'SessionCheckpointed':
      return withData(
        withRecord(state, event.data.at, (record) => {
          record.state = event.data.state;
          if (event.data.userActivity) record.lastUserMessageAt = event.data.at;
        }),
        event.data.data,
      );
    case 'IngressRequested':
      return withData(
        withRecord(state, event.data.at, (record) => {
          if (event.data.state) record.state = event.data.state;
          record.phase = 'ingress_pending';
          record.provenanceId = event.data.provenanceId;
          record.ingressNextAttemptAt = event.data.nextAttemptAt;
        }),
        event.data.data,
      );
    case 'IngressStarted':
      return withRecord(state, event.data.at, (record) => {
        record.phase = 'ingress_in_progress';
        record.provenanceId = event.data.provenanceId;
        record.ingressNextAttemptAt = null;
      });
    case 'IngressFailed':
      return withRecord(state, event.data.at, (record) => {
        record.ingressFailures = trimFailures([...record.ingressFailures, event.data.failure], event.data.retainedFailures);
        record.ingressFailureCount = event.data.attempt;
        record.phase = event.data.terminal ? 'ingress_failed' : 'ingress_pending';
        record.ingressNextAttemptAt = event.data.nextAttemptAt;
      });
    case 'IngressRetried':
      return withData(
        withRecord(state, event.data.at, (record) => {
          record.state = event.data.state;
          record.phase = 'ingress_pending';
          record.ingressFailureCount = 0;
          record.ingressNextAttemptAt = null;
        }),
        event.data.data,
      );
    case 'IngressReleased':
      return withRecord(state, event.data.at, (record) => {
        record.phase = 'ingress_pending';
        record.ingressNextAttemptAt = null;
        if (event.data.resetFailureCount) record.ingressFailureCount = 0;
        record.ingressFailures = trimFailures(record.ingressFailures, event.data.retainedFailures);
      });
    case 'SessionCompleted': {
      const completed = withRecord(state, event.data.at, (record) => {
        record.state = event.data.state;
        record.phase = 'complete';
        record.endedAt = event.data.at;
      });
      return completed === state ? state : withData({ ...completed, receipt: event.data.receipt, kept: event.data.kept === true }, event.data.data);
    }
    case 'SessionImported': {
      if (state.record) return state;
      const record = cloneJson(event.data.record);
      const key = event.data.record.state.startIdempotencyId;
      const lastActivityAt = record.updatedAt;
      return typeof key === 'string' ? { ...state, record, startKey: key, lastActivityAt } : { ...state, record, lastActivityAt };
    }
    case 'CommandImported':
    case 'CommandEnqueued':
      if (commandIndex(state, event.data.command.id) >= 0) return state;
      return {
        ...state,
        commands: [...state.commands, event.data.command],
        lastActivityAt: event.type === 'CommandEnqueued' ? event.data.command.createdAt : event.data.at,
      };
    case 'CommandClaimed': {
      const { worker, leaseUntil, at } = event.data;
      return withCommand(state, event.data.commandId, at, (command) => {
        // A worker renewing its own lease is still the same run: it keeps its start time.
        const renewal = command.status === 'processing' && worker !== undefined && command.worker === worker;
        command.status = 'processing';
        if (!renewal) command.processingStartedAt = at;
        if (worker !== undefined) {
          command.worker = worker;
          command.leaseUntil = leaseUntil;
        }
      });
    }
    case 'CommandCompleted':
      return withCommand(state, event.data.commandId, event.data.at, (command) => {
        command.status = 'complete';
        command.outcome = event.data.outcome;
        command.completedAt = event.data.at;
      });
    case 'CommandCancelRequested':
      return withCommand(state, event.data.commandId, event.data.at, (command) => {
        command.cancelRequested = true;
      });
    default:
      return assertNever(event);
  }
}

function commandIndex(state: SessionStreamState, commandId: string): number {
  return state.commands.findIndex((command) => command.id === commandId);
}

/** The state with `change` made to a copy of its record, whose version moves on at `at`; unchanged without a record. */
function withRecord(state: SessionStreamState, at: string, change: (record: LifecycleRecord) => void): SessionStreamState {
  if (!state.record) return state;
  const record = { ...state.record };
  change(record);
  record.version += 1;
  record.updatedAt = at;
  return { ...state, record, lastActivityAt: at };
}

/** The state with the application's data replaced when the event carries it (`undefined`: unchanged). */
function withData(state: SessionStreamState, data: JsonValue | undefined): SessionStreamState {
  return data === undefined || !state.record ? state : { ...state, data };
}

/** The state with `change` made to a copy of command `commandId` at `at`; unchanged without that command. */
function withCommand(state: SessionStreamState, commandId: string, at: string, change: (command: SessionCommand) => void): SessionStreamState {
  const index = commandIndex(state, commandId);
  if (index < 0) return state;
  const commands = [...state.commands];
  const command = { ...(commands[index] as SessionCommand) };
  change(command);
  commands[index] = command;
  return { ...state, commands, lastActivityAt: at };
}

/** The newest `keep` failures (the same list when it holds no more). */
function trimFailures(failures: IngressFailureEntry[], keep: number): IngressFailureEntry[] {
  return failures.length > keep ? failures.slice(failures.length - keep) : failures;
}

function appendToLog(
  state: SessionStreamState,
  event: Extract<SessionEvent, { type: 'TranscriptAppended' | 'ObjectStaged' }>,
  keepLog: boolean,
): SessionStreamState {
  const boxId = state.logSize + 1;
  let entry: LogEntry;
  if (event.type === 'TranscriptAppended') {
    entry = { boxId, role: event.data.role, text: event.data.text, at: event.data.at };
  } else {
    const { at, ...object } = event.data;
    entry = { boxId, role: 'pending-object', text: object.fileName, at, object };
  }
  const firstUserMessage =
    state.firstUserMessage === null && entry.role === 'user-message'
      ? [...displayText(entry)].slice(0, FIRST_USER_MESSAGE_LIMIT).join('')
      : state.firstUserMessage;
  return { ...state, log: keepLog ? appendChunked(state.log, entry) : [], logSize: boxId, firstUserMessage, lastActivityAt: entry.at };
}

function appendChunked(log: LogEntry[][], entry: LogEntry): LogEntry[][] {
  const last = log[log.length - 1];
  if (!last || last.length >= LOG_CHUNK_SIZE) return [...log, [entry]];
  return [...log.slice(0, -1), [...last, entry]];
}

function assertNever(value: never): never {
  throw new TypeError(`unhandled session event ${JSON.stringify(value)}`);
}

/** The log entries in order (the chunks concatenated). */
export function logEntries(state: SessionStreamState): LogEntry[] {
  return state.log.flat();
}

/** The log entry at 1-based `boxId`, if any. */
export function logEntry(state: SessionStreamState, boxId: number): LogEntry | undefined {
  if (!Number.isSafeInteger(boxId) || boxId < 1 || boxId > state.logSize) return undefined;
  const index = boxId - 1;
  // Chunks are full except the last, so the position is arithmetic.
  return state.log[Math.floor(index / LOG_CHUNK_SIZE)]?.[index % LOG_CHUNK_SIZE];
}

function parseOrCorrupt<E>(parse: (type: string, data: JsonValue) => E | string, event: RecordedEvent): E {
  const parsed = parse(event.type, event.data);
  if (typeof parsed === 'string') throw new CorruptionError(`stream ${event.streamId}`, event.revision, parsed);
  return parsed;
}

function fromSnapshotWith<S>(
  schema: { safeParse(value: unknown): { success: true; data: S } | { success: false; error: unknown } },
  state: JsonValue,
  what: string,
): S {
  const parsed = schema.safeParse(state);
  if (!parsed.success) throw new CorruptionError(what, undefined, 'snapshot state does not match the session state schema', { cause: parsed.error });
  return parsed.data;
}

/**
 * The reducer of session streams, for `foldStream` and `compactStream`. Stored events that are not
 * well-formed session events are reported as `CorruptionError` naming the stream and revision.
 */
export const sessionReducer: StreamReducer<SessionStreamState> = {
  schemaVersion: SESSION_STATE_SCHEMA_VERSION,
  // `SessionCompleted` version 2 may say the stream is kept: a release that knows only version 1 (and would delete
  // the stream it takes for handed over) refuses to fold it instead. Version 1 data is version 2 data as it is.
  upcasters: { SessionCompleted: [{ from: 1, to: 2, upcast: (data) => data }] },
  initial: (stream: StreamId) => initialSessionState(sessionIdOfStream(stream) ?? stream),
  apply: (state, event) => applySessionEvent(state, parseOrCorrupt(parseSessionEvent, event)),
  toSnapshot: (state) => cloneJson(state) as unknown as JsonValue,
  fromSnapshot: (state) => fromSnapshotWith(sessionStreamStateSchema, state, 'session snapshot'),
};

/**
 * The session reducer without the log's entries (counts and the first user message are kept): what the
 * service holds in memory for every session to answer queries across sessions.
 */
export const sessionSummaryReducer: StreamReducer<SessionStreamState> = {
  ...sessionReducer,
  apply: (state, event) => withoutLog(applySessionEvent(state, parseOrCorrupt(parseSessionEvent, event), { keepLog: false })),
  fromSnapshot: (state) => withoutLog(sessionReducer.fromSnapshot(state)),
};

/** A session's state as the summary reducer folds it: the full state without the log's entries or the application's data. */
function withoutLog(state: SessionStreamState): SessionStreamState {
  return state.log.length === 0 && state.data === null ? state : { ...state, log: [], data: null };
}

/** The catalog before its first receipt. */
export function initialCatalogState(): CatalogState {
  return { receipts: [] };
}

/** Adds a receipt unless one with the same `sessionObjectId` is already recorded (the first one wins). */
export function applyCatalogEvent(state: CatalogState, event: CatalogEvent): CatalogState {
  return immer.produce(state, (draft) => {
    switch (event.type) {
      case 'CompletionRecorded': {
        const id = event.data.receipt.sessionObjectId;
        if (!state.receipts.some((receipt) => receipt.sessionObjectId === id)) draft.receipts.push(event.data.receipt);
        return;
      }
      default:
        return assertNever(event.type);
    }
  });
}

/** The reducer of the `catalog` stream. */
export const catalogReducer: StreamReducer<CatalogState> = {
  schemaVersion: CATALOG_STATE_SCHEMA_VERSION,
  initial: () => initialCatalogState(),
  apply: (state, event) => applyCatalogEvent(state, parseOrCorrupt(parseCatalogEvent, event)),
  toSnapshot: (state) => cloneJson(state) as unknown as JsonValue,
  fromSnapshot: (state) => fromSnapshotWith(catalogStateSchema, state, 'catalog snapshot'),
};

/** A start key before its first session. */
export function initialStartKeyState(): StartKeyState {
  return { bindings: [] };
}

/**
 * Binds the next incarnation (a binding out of turn changes nothing), or marks one released. Pure and total:
 * the decisions only ever record the next incarnation, so a binding out of turn is a stray to ignore.
 */
export function applyStartKeyEvent(state: StartKeyState, event: StartKeyEvent): StartKeyState {
  switch (event.type) {
    case 'StartKeyBound': {
      if (event.data.incarnation !== state.bindings.length + 1) return state;
      return { bindings: [...state.bindings, { incarnation: event.data.incarnation, sessionId: event.data.sessionId, released: false }] };
    }
    case 'StartKeyReleased': {
      const index = event.data.incarnation - 1;
      const binding = state.bindings[index];
      if (!binding || binding.released || binding.sessionId !== event.data.sessionId) return state;
      return { bindings: state.bindings.map((candidate, at) => (at === index ? { ...candidate, released: true } : candidate)) };
    }
    default:
      return assertNever(event);
  }
}

/** The reducer of start-key streams. */
export const startKeyReducer: StreamReducer<StartKeyState> = {
  schemaVersion: START_KEY_STATE_SCHEMA_VERSION,
  initial: () => initialStartKeyState(),
  apply: (state, event) => applyStartKeyEvent(state, parseOrCorrupt(parseStartKeyEvent, event)),
  toSnapshot: (state) => cloneJson(state) as unknown as JsonValue,
  fromSnapshot: (state) => fromSnapshotWith(startKeyStateSchema, state, 'start-key snapshot'),
};
