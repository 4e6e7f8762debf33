import type { JsonObject, JsonValue, Phase } from '@sessionfold/core';

/**
 * A session named by its index: 0–2 are started by `start` calls (start key `key-<n>`); 3 is never
 * started, only registered under the id its start key would give, so calls on it mostly exercise the
 * "not found" answers.
 */
export type SessionRef = 0 | 1 | 2 | 3;

/** How far a call's `expectedVersion` is from the session's current version (0: the right one). */
export type VersionSkew = -1 | 0 | 1;

/** A command of a session named by its index; its idempotency id is `cmd-<n>`. */
export type CommandRef = 0 | 1 | 2;

/** The command a command call targets: one by index, or `'head'`, the session's next open command per `commandHeads()`. */
export type CommandTarget = CommandRef | 'head';

/** Transcript roles the calls use: one of each kind the materialised view treats differently. */
export type CallRole = 'user-message' | 'assistant-message' | 'system-error' | 'tool-result';

/**
 * One call of a random sequence, as plain data: what to call on the service (or on the store under it)
 * with which arguments. The same call runs on every store; ids and versions are resolved per store.
 */
export type Call =
  | { op: 'start'; session: SessionRef; sessionType: 'conversation' | 'free-time'; invalid: null | 'startedAt' | 'idempotencyId' }
  | { op: 'register'; session: SessionRef; state: JsonObject }
  | { op: 'get'; session: SessionRef }
  | { op: 'list'; phase: Phase | null }
  | { op: 'commandHeads' }
  | { op: 'enqueue'; session: SessionRef; command: CommandRef; kind: string; payload: JsonValue }
  | { op: 'claimCommand'; session: SessionRef; command: CommandTarget }
  | { op: 'completeCommand'; session: SessionRef; command: CommandTarget; outcome: JsonValue }
  | { op: 'cancelCommand'; session: SessionRef; command: CommandTarget }
  | { op: 'stop'; session: SessionRef }
  | { op: 'checkpoint'; session: SessionRef; skew: VersionSkew; state: JsonObject; userActivity: boolean }
  | { op: 'requestIngress'; session: SessionRef; skew: VersionSkew; state: JsonObject }
  | { op: 'startIngress'; session: SessionRef; skew: VersionSkew; provenanceId: string }
  | { op: 'failIngress'; session: SessionRef; skew: VersionSkew; code: string | null; message: string }
  /** `startIngress` then `failIngress`, both at the version current when each runs: one whole failed attempt. */
  | { op: 'failedAttempt'; session: SessionRef; code: string | null }
  | { op: 'retryIngress'; session: SessionRef; skew: VersionSkew; state: JsonObject }
  | { op: 'releaseInterruptedIngress' }
  | { op: 'completeIngress'; session: SessionRef; skew: VersionSkew }
  | { op: 'appendTranscript'; session: SessionRef; role: CallRole; text: string }
  /** `appendTranscript` with a text too large for one event. */
  | { op: 'appendOversize'; session: SessionRef }
  | { op: 'stageObject'; session: SessionRef; fileName: string | null; mediaType: string; bytes: readonly number[] }
  | { op: 'object'; session: SessionRef; pending: number }
  | { op: 'complete'; session: SessionRef; skew: VersionSkew; objectId: string | null; nested: boolean }
  | { op: 'recordCompletion'; objectId: string; session: SessionRef | null }
  | { op: 'compact'; stream: SessionRef | 'catalog' }
  | { op: 'reopen' };

/** Length of the text of `appendOversize`: one character more than a store takes in one event (1 MiB). */
export const OVERSIZE_TEXT_LENGTH = 1024 * 1024 + 1;

/** The start idempotency key of session `ref`. */
export function startKey(ref: SessionRef): string {
  return `key-${ref}`;
}

/** The enqueue idempotency key of command `ref`. */
export function commandKey(ref: CommandRef): string {
  return `cmd-${ref}`;
}

const json = (value: unknown): string => JSON.stringify(value);
const skewText = (skew: VersionSkew): string => (skew === 0 ? 'v' : skew > 0 ? 'v+1' : 'v-1');
const s = (ref: SessionRef): string => `s${ref}`;
const c = (target: CommandTarget): string => (target === 'head' ? 'head' : `c${target}`);

/** A one-line, readable form of a call, e.g. `checkpoint(s1, v-1, {"pendingTurn":true})`: what a shrunk failure prints. */
export function describeCall(call: Call): string {
  switch (call.op) {
    case 'start':
      return `start(${s(call.session)}, ${call.sessionType}${call.invalid ? `, invalid ${call.invalid}` : ''})`;
    case 'register':
      return `register(${s(call.session)}, ${json(call.state)})`;
    case 'get':
      return `get(${s(call.session)})`;
    case 'list':
      return `list(${call.phase ?? ''})`;
    case 'commandHeads':
    case 'releaseInterruptedIngress':
    case 'reopen':
      return `${call.op}()`;
    case 'enqueue':
      return `enqueue(${s(call.session)}, c${call.command}, ${json(call.kind)}, ${json(call.payload)})`;
    case 'claimCommand':
    case 'cancelCommand':
      return `${call.op}(${s(call.session)}/${c(call.command)})`;
    case 'completeCommand':
      return `completeCommand(${s(call.session)}/${c(call.command)}, ${json(call.outcome)})`;
    case 'stop':
      return `stop(${s(call.session)})`;
    case 'checkpoint':
      return `checkpoint(${s(call.session)}, ${skewText(call.skew)}, ${json(call.state)}${call.userActivity ? ', userActivity' : ''})`;
    case 'requestIngress':
    case 'retryIngress':
      return `${call.op}(${s(call.session)}, ${skewText(call.skew)}, ${json(call.state)})`;
    case 'startIngress':
      return `startIngress(${s(call.session)}, ${skewText(call.skew)}, ${json(call.provenanceId)})`;
    case 'failIngress':
      return `failIngress(${s(call.session)}, ${skewText(call.skew)}, code ${json(call.code)}, ${json(call.message)})`;
    case 'failedAttempt':
      return `failedAttempt(${s(call.session)}, code ${json(call.code)})`;
    case 'appendOversize':
      return `appendTranscript(${s(call.session)}, user-message, ${OVERSIZE_TEXT_LENGTH} × "x")`;
    case 'completeIngress':
      return `completeIngress(${s(call.session)}, ${skewText(call.skew)})`;
    case 'appendTranscript':
      return `appendTranscript(${s(call.session)}, ${call.role}, ${json(call.text)})`;
    case 'stageObject':
      return `stageObject(${s(call.session)}, ${json(call.fileName)}, ${json(call.mediaType)}, [${call.bytes.join(',')}])`;
    case 'object':
      return `object(${s(call.session)}, pending:${call.pending})`;
    case 'complete':
      return `complete(${s(call.session)}, ${skewText(call.skew)}, object ${json(call.objectId)}${call.nested ? ' in historyIngress' : ''})`;
    case 'recordCompletion':
      return `recordCompletion(${json(call.objectId)}${call.session === null ? '' : `, ${s(call.session)}`})`;
    case 'compact':
      return `compact(${call.stream === 'catalog' ? 'catalog' : s(call.stream)})`;
  }
}
