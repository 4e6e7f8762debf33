import { z } from 'zod';
import { SessionFileInvalidError } from './errors.js';
import {
  CONTINUATION_FIELDS,
  counterSchema,
  loopSchema,
  loopV1Schema,
  sessionIdentitySchema,
  transcriptEntrySchema,
  turnSchema,
  type LoopState,
  type SessionIdentity,
  type TranscriptEntry,
  type Turn,
} from './records.js';

/** The version this package writes; it reads this one and version 1. */
export const SCHEMA_VERSION = 2;
/** Every schema version `loadSnapshot` accepts. */
export const READABLE_VERSIONS = [1, 2] as const;
export type SchemaVersion = (typeof READABLE_VERSIONS)[number];

/** A saved run: who it belongs to, its conversation, the loop's state, and how often it was compacted. */
export interface SessionSnapshot {
  identity: SessionIdentity;
  turns: Turn[];
  transcript: TranscriptEntry[];
  loop: LoopState;
  compactions: number;
}

/** The object a session file holds: the snapshot's fields after its schema `version`, in this order. */
export interface SessionPayload extends SessionSnapshot {
  version: SchemaVersion;
}

/** The envelope's fields after `version`, in file order, with the JSON kind each must be. */
const ENVELOPE_FIELDS = [
  ['identity', 'object'],
  ['turns', 'array'],
  ['transcript', 'array'],
  ['loop', 'object'],
  ['compactions', 'number'],
] as const;
const ENVELOPE_KEYS = new Set<string>(['version', ...ENVELOPE_FIELDS.map(([name]) => name)]);

/**
 * Checks a parsed session file (or a payload about to be written) against the format and returns it typed;
 * throws `SessionFileInvalidError` naming `path` and the first problem found.
 */
export function validatePayload(payload: unknown, path: string): SessionPayload {
  const fail = (reason: string, waysOut = true): never => {
    throw new SessionFileInvalidError(path, reason, { waysOut });
  };
  if (!isObject(payload)) {
    return fail(`is not a session snapshot: expected a JSON object, found ${describe(payload)}.`, false);
  }
  if (!('version' in payload)) fail('is missing the envelope field "version".');
  const version = payload['version'];
  if (typeof version !== 'number' || !Number.isInteger(version)) {
    fail(`has a mistyped envelope field "version": expected an integer, found ${describe(version)}.`);
  }
  if (!(READABLE_VERSIONS as readonly unknown[]).includes(version)) {
    fail(
      `has schema version ${String(version)}, but this version of the program writes schema version ` +
        `${SCHEMA_VERSION} and reads versions ${READABLE_VERSIONS.join(' and ')}.`,
    );
  }
  for (const [name] of ENVELOPE_FIELDS) {
    if (!(name in payload)) fail(`is missing the envelope field "${name}".`);
  }
  for (const key of Object.keys(payload)) {
    if (!ENVELOPE_KEYS.has(key)) fail(`has an unknown envelope field ${JSON.stringify(key)}.`);
  }
  for (const [name, kind] of ENVELOPE_FIELDS) {
    const value = payload[name];
    if (kindOf(value) !== kind) {
      fail(`has a mistyped envelope field "${name}": expected ${article(kind)}, found ${describe(value)}.`);
    }
  }
  const loop = payload['loop'] as Record<string, unknown>;
  if (version === 1) {
    for (const field of CONTINUATION_FIELDS) {
      if (field in loop) fail(`has "loop.${field}", which only schema version 2 may hold, in a version 1 file.`);
    }
  }

  const schema = z.strictObject({
    identity: sessionIdentitySchema,
    turns: z.array(turnSchema),
    transcript: z.array(transcriptEntrySchema),
    loop: version === 1 ? loopV1Schema : loopSchema,
    compactions: counterSchema,
  });
  const { version: _version, ...body } = payload;
  const result = schema.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0];
    if (issue) fail(describeIssue(issue, body));
  }
  // The parsed input itself is returned, not zod's copy, so opaque objects keep the file's key order.
  return payload as unknown as SessionPayload;
}

function describeIssue(issue: z.core.$ZodIssue, root: unknown): string {
  const path = issue.path.filter((part): part is string | number => typeof part !== 'symbol');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    return `has an unknown field ${JSON.stringify(key)} in ${formatPath(path)}.`;
  }
  const parentPath = path.slice(0, -1);
  const key = path[path.length - 1];
  const parent = valueAt(root, parentPath);
  if (key !== undefined && isObject(parent) && !Array.isArray(parent) && !(String(key) in parent)) {
    return `is missing the field ${JSON.stringify(String(key))} in ${formatPath(parentPath)}.`;
  }
  return `has an invalid value at ${formatPath(path)}: expected ${expectation(issue)}, found ${describe(valueAt(root, path))}.`;
}

function expectation(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.expected === 'int') return 'a non-negative integer';
      if (issue.expected === 'object' || issue.expected === 'record') return 'an object';
      return article(issue.expected);
    case 'too_small':
    case 'too_big':
      return 'a non-negative integer';
    case 'invalid_union':
      return 'options' in issue && Array.isArray(issue.options) ? `one of ${issue.options.map((o) => JSON.stringify(o)).join(', ')}` : 'a known record';
    case 'invalid_value':
      return `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'custom':
      return `JSON (${issue.message})`;
    default:
      return issue.message;
  }
}

function formatPath(path: readonly (string | number)[]): string {
  if (path.length === 0) return 'the envelope';
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part)) out += out === '' ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out;
}

function valueAt(root: unknown, path: readonly (string | number)[]): unknown {
  let value = root;
  for (const part of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function article(kind: string): string {
  return /^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`;
}

/** A short, readable rendering of a found value for an error message. */
function describe(value: unknown): string {
  switch (kindOf(value)) {
    case 'undefined':
      return 'nothing';
    case 'array':
      return 'an array';
    case 'object':
      return 'an object';
    case 'string': {
      const text = JSON.stringify(value);
      return text.length > 40 ? `${text.slice(0, 37)}..."` : text;
    }
    default:
      return String(value);
  }
}
