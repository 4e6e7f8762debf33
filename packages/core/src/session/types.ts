import type { JsonObject, JsonValue } from '../kernel/json.js';

// Plain declarations (type aliases, so that each is also a `JsonValue`) of what the service returns. The zod schemas
// in `model.ts` parse the same shapes (a compile-time check there keeps both in step). The inputs are their schemas'
// types (`inputs.ts`).

/** Where a session is in its life. */
export type Phase = 'active' | 'ingress_pending' | 'ingress_in_progress' | 'ingress_failed' | 'complete';

/** Roles of the session log; `pending-object` entries come only from `stageObject`. */
export type LogRole =
  | 'system-message'
  | 'system-error'
  | 'user-message'
  | 'assistant-message'
  | 'assistant-tool-call'
  | 'tool-result'
  | 'tool-error'
  | 'object'
  | 'pending-object';

/** Roles a caller may append with `appendTranscript`. */
export type TranscriptRole = Exclude<LogRole, 'pending-object'>;

/** The archive's acknowledgement that a session was committed as a session object. */
export type CompletionReceipt = {
  transactionId: string | null;
  sessionObjectId: string;
  sessionId: string | null;
  sessionType: string | null;
  createdAt: string | null;
  committedAt: string | null;
  nodeIds: Record<string, string>;
  objectIds: Record<string, string>;
};

/** Where a command is: queued, claimed by a worker, or done. */
export type CommandStatus = 'pending' | 'processing' | 'complete';

/**
 * One command of a session's queue. Commands run one at a time, lowest `sequence` first. `enqueueOrder` is
 * the order the service decided enqueues in, across sessions; 0 on commands recorded before it existed.
 */
export type SessionCommand = {
  id: string;
  sessionId: string;
  sequence: number;
  enqueueOrder: number;
  kind: string;
  payload: JsonValue;
  status: CommandStatus;
  cancelRequested: boolean;
  outcome: JsonValue | null;
  createdAt: string;
  processingStartedAt: string | null;
  completedAt: string | null;
  idempotencyId: string;
  /** The worker that holds (or last held) the command, when it was claimed with `{ worker, leaseMs }`. */
  worker?: string | undefined;
  /** When that worker's lease ends (ISO time); another worker may take the command over from then on. */
  leaseUntil?: string | undefined;
};

/** One failed ingress attempt, as kept in `ingressFailures`. */
export type IngressFailureEntry = {
  attempt: number;
  at: string | null;
  stage: string | null;
  code: string | null;
  message: string;
  roundsUsed: number | null;
  contextTokens: number | null;
  contextWindowTokens: number | null;
};

/** A staged object's metadata as recorded (unsanitised; `object()` sanitises on the way out). */
export type StagedObject = {
  pendingId: string;
  fileName: string;
  mediaType: string;
  size: number;
  sha256: string;
};

/** One entry of the session log; `boxId` is its 1-based position, shared by transcript text and objects. */
export type LogEntry = {
  boxId: number;
  role: LogRole;
  text: string;
  at: string;
  object?: StagedObject | undefined;
};

/** The lifecycle part of a session; `state` holds only the whitelisted control keys. */
export type LifecycleRecord = {
  id: string;
  phase: Phase;
  startedAt: string;
  updatedAt: string;
  state: JsonObject;
  provenanceId: string | null;
  version: number;
  lastUserMessageAt: string | null;
  endedAt: string | null;
  ingressFailureCount: number;
  ingressFailures: IngressFailureEntry[];
  ingressNextAttemptAt: string | null;
};

/**
 * A transcript line of the materialised view: the conversation's user, assistant and system lines (tool traffic
 * and objects are in `events`).
 */
export type TranscriptEntry = {
  role: 'user' | 'assistant' | 'system';
  content: string;
  /** 1-based position of the entry in the session log. */
  boxId: number;
  objects?: JsonValue[] | undefined;
  inputKind?: JsonValue | undefined;
  externalEventId?: JsonValue | undefined;
  attachments?: JsonValue[] | undefined;
};

/**
 * A session's `state` as `get` returns it: the control state (the lifecycle fields the service keeps, typed
 * `JsonValue`) plus the view rebuilt from the session's events. The view's keys are never stored: passed back
 * in a `state`, they are ignored.
 */
export type SessionState = {
  [key: string]: JsonValue;
  /** The session's id (a receipt's record: the id of the session it was, or null). */
  sessionId: string | null;
  /** The conversation lines of the log. */
  transcript: TranscriptEntry[];
  /** Every log entry: transcript text, tool traffic and staged objects. */
  events: LogEntry[];
  /** `[role]\ntext` of every log entry, separated by blank lines. */
  transcriptText: string;
  /** The session's commands in the order they were enqueued. */
  commands: SessionCommand[];
  /** The objects staged on the session, in log order. */
  objects: StagedObject[];
};

/**
 * A session as `get` and the writing calls return it. `data` is the application's own state, exactly as it was
 * last given (null when never given); `state` is the control state and the view; `lastActivityAt` is the time of
 * the session's last event of any kind (a transcript line, a command change, an object, a lifecycle change).
 */
export type SessionRecord<S = JsonValue> = Omit<LifecycleRecord, 'state'> & {
  state: SessionState;
  data: S | null;
  lastActivityAt: string;
};

/** The overview `list()` gives of a session's control state. */
export type SessionSummaryState = {
  sessionType: JsonValue;
  channel: JsonValue;
  freeTime: JsonValue;
  orchestration: JsonValue;
  firstUserMessage: string | null;
  boxCount: number;
  eventCount: number;
  pendingTurn: JsonValue;
  /** A completion receipt's entry: the session object it names (absent on a session's own entry). */
  sessionObjectId?: string | undefined;
  /** A completion receipt's entry: the session it was, if known. */
  sessionId?: string | null | undefined;
  /** A completion receipt's entry: the receipt. */
  commitReceipt?: CompletionReceipt | undefined;
};

/** A session as `list()` shows it: the lifecycle fields and an overview, without `data` or the log. */
export type SessionSummary = Omit<LifecycleRecord, 'state'> & {
  summary: true;
  state: SessionSummaryState;
  lastActivityAt: string;
};

/**
 * The application's data for a write: the new value, or a function of the current value (null when never set)
 * returning it, called on the state the write is decided on (again, if the write is decided again).
 */
export type DataInput<S> = S | ((current: S | null) => S);
