import { isUuid } from './ids.js';
import { TRANSCRIPT_ROLES } from './model.js';
import { isRfc3339 } from './rfc3339.js';

/**
 * A hand-written parse of the common, well-formed shape of one service input: exactly what the input's zod
 * schema returns for it, or undefined for anything it is not sure of (an unknown member, an `undefined`, a
 * getter that throws, anything the schema might refuse), which the schema then decides and names. The schemas
 * stay the definition; these only spare the calls made every few milliseconds zod's general machinery, which is
 * a good part of what a call costs when the disk is fast. `inputs.test.ts` holds each one to its schema.
 */
export type FastPath = (value: unknown) => unknown;

/** Nesting a copy walks before it leaves the value to the schema (well below `MAX_JSON_DEPTH`, which also catches cycles). */
const COPY_DEPTH = 64;

const DOUBT: unique symbol = Symbol('doubt');

/** `value` as `jsonInputValueSchema` keeps it (a copy, `-0` as `0`), or `DOUBT` for anything that is not plainly JSON. */
function copyOfJson(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : DOUBT;
    case 'object':
      break;
    default:
      return DOUBT;
  }
  if (value === null) return null;
  if (depth >= COPY_DEPTH) return DOUBT;
  if (Array.isArray(value)) {
    const copy = new Array<unknown>(value.length);
    for (let index = 0; index < value.length; index++) {
      const member = copyOfJson(value[index] as unknown, depth + 1);
      if (member === DOUBT) return DOUBT;
      copy[index] = member;
    }
    return copy;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return DOUBT;
  const copy: Record<string, unknown> = {};
  const keys = Object.keys(value);
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index] as string;
    if (key === '__proto__') return DOUBT;
    const member = copyOfJson((value as Record<string, unknown>)[key], depth + 1);
    if (member === DOUBT) return DOUBT;
    copy[key] = member;
  }
  return copy;
}

/** A plain object whose own members are all among `known` and none `undefined` (what the schemas take without a doubt). */
function plainWith(value: unknown, known: ReadonlySet<string>): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return false;
  const keys = Object.keys(value);
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index] as string;
    if (!known.has(key) || (value as Record<string, unknown>)[key] === undefined) return false;
  }
  return true;
}

/** `idempotencyId`'s rule: 1 to 255 UTF-8 bytes (a UTF-16 unit never takes more than 3). */
function isIdempotencyId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && (value.length * 3 <= 255 || Buffer.byteLength(value, 'utf8') <= 255);
}

/** A string of 1 to 255 UTF-16 units (`z.string().min(1).max(255)`). */
function isShortText(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= 255;
}

/** Runs `parse`, answering undefined when reading the caller's value throws (the schema then says why). */
function guarded(parse: FastPath): FastPath {
  return (value) => {
    try {
      return parse(value);
    } catch {
      return undefined;
    }
  };
}

/** `sessionIdSchema`: a UUID, in lowercase. */
export const fastSessionId: FastPath = (value) => (typeof value === 'string' && isUuid(value) ? value.toLowerCase() : undefined);

/** `commandIdSchema`. */
export const fastCommandId: FastPath = (value) => (isShortText(value) ? value : undefined);

const START_MEMBERS: ReadonlySet<string> = new Set(['idempotencyId', 'startedAt', 'sessionType', 'durationMinutes', 'customPrompt']);

/** `startSessionSchema`. */
export const fastStartSession: FastPath = guarded((value) => {
  if (!plainWith(value, START_MEMBERS)) return undefined;
  const { idempotencyId, startedAt, sessionType, durationMinutes, customPrompt } = value;
  if (!isIdempotencyId(idempotencyId) || typeof startedAt !== 'string' || !isRfc3339(startedAt) || typeof sessionType !== 'string') return undefined;
  const parsed: Record<string, unknown> = { idempotencyId, startedAt, sessionType };
  if (durationMinutes !== undefined) {
    if (durationMinutes !== null && (typeof durationMinutes !== 'number' || !Number.isFinite(durationMinutes))) return undefined;
    parsed.durationMinutes = durationMinutes === 0 ? 0 : durationMinutes;
  }
  if (customPrompt !== undefined) {
    if (customPrompt !== null && typeof customPrompt !== 'string') return undefined;
    parsed.customPrompt = customPrompt;
  }
  return parsed;
});

const COMMAND_MEMBERS: ReadonlySet<string> = new Set(['idempotencyId', 'kind', 'payload']);

/** `newCommandSchema`. */
export const fastNewCommand: FastPath = guarded((value) => {
  if (!plainWith(value, COMMAND_MEMBERS)) return undefined;
  const { idempotencyId, kind } = value;
  if (!isIdempotencyId(idempotencyId) || typeof kind !== 'string') return undefined;
  const payload = 'payload' in value ? copyOfJson(value.payload, 0) : {};
  return payload === DOUBT ? undefined : { idempotencyId, kind, payload };
});

const OUTCOME_MEMBERS: ReadonlySet<string> = new Set(['outcome', 'worker']);

/** `commandOutcomeSchema`. */
export const fastCommandOutcome: FastPath = guarded((value) => {
  if (!plainWith(value, OUTCOME_MEMBERS)) return undefined;
  const outcome = 'outcome' in value ? copyOfJson(value.outcome, 0) : {};
  if (outcome === DOUBT) return undefined;
  if (!('worker' in value)) return { outcome };
  return isShortText(value.worker) ? { outcome, worker: value.worker } : undefined;
});

const CHECKPOINT_MEMBERS: ReadonlySet<string> = new Set(['expectedVersion', 'state', 'userActivity']);

/** `checkpointSchema`. */
export const fastCheckpoint: FastPath = guarded((value) => {
  if (!plainWith(value, CHECKPOINT_MEMBERS)) return undefined;
  const { expectedVersion, state, userActivity = false } = value;
  if (typeof expectedVersion !== 'number' || !Number.isSafeInteger(expectedVersion) || expectedVersion < 0 || typeof userActivity !== 'boolean')
    return undefined;
  if (typeof state !== 'object' || state === null || Array.isArray(state)) return undefined;
  const copy = copyOfJson(state, 0);
  return copy === DOUBT ? undefined : { expectedVersion, state: copy, userActivity };
});

const TRANSCRIPT_MEMBERS: ReadonlySet<string> = new Set(['role', 'text']);
const ROLES: ReadonlySet<unknown> = new Set<unknown>(TRANSCRIPT_ROLES);

/** `appendTranscriptSchema`. */
export const fastAppendTranscript: FastPath = guarded((value) => {
  if (!plainWith(value, TRANSCRIPT_MEMBERS)) return undefined;
  const { role, text } = value;
  return ROLES.has(role) && typeof text === 'string' ? { role, text } : undefined;
});
