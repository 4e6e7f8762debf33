import type { JsonValue } from './json.js';

/**
 * Deepest nesting of arrays and objects accepted in event data and snapshot states: a value with this many
 * levels is stored, one with more is `InvalidInputError`. Bounded so every store, and every reader that
 * parses or walks the JSON recursively, handles all it accepts without running out of stack.
 */
export const MAX_JSON_DEPTH = 256;

/** Why a value is not plain JSON (see `readJson`). */
interface JsonProblem {
  readonly path: readonly (string | number)[];
  readonly message: string;
  readonly cause?: unknown;
}

/** What a walk found: the value (its copy when copying), or the first problem. */
type JsonRead = { readonly value: JsonValue; readonly problem?: undefined } | { readonly value?: undefined; readonly problem: JsonProblem };

/**
 * The one walk behind `readJson` and `cloneJson` (json.ts says what it accepts). `anyDepth` lets a value nest deeper
 * than `MAX_JSON_DEPTH`, for copies of records built around checked JSON (a cycle is still refused).
 */
export function walkJson(value: unknown, copy: boolean, refuseProtoKeys: boolean, anyDepth: boolean): JsonRead {
  try {
    let walk = new Walk(copy, refuseProtoKeys, undefined, MAX_JSON_DEPTH);
    let read = member(value, 0, walk);
    if (walk.tooDeep) {
      // Depth alone ends the first walk, a cycle included: a value that reaches the limit is walked again keeping its
      // ancestors, to name a cycle where it closes (or, with `anyDepth`, to copy the deep value).
      walk = new Walk(copy, refuseProtoKeys, new Set(), anyDepth ? Number.POSITIVE_INFINITY : MAX_JSON_DEPTH);
      read = member(value, 0, walk);
    }
    if (read !== NOT_JSON) return { value: (copy ? read : value) as JsonValue };
    return { problem: walk.tooDeep ? { path: [], message: TOO_DEEP } : { path: walk.path.reverse(), message: walk.message } };
  } catch (error) {
    return { problem: { path: [], message: `could not be read: ${error instanceof Error ? error.message : String(error)}`, cause: error } };
  }
}

/** `path` written from `root` as a store names a field: `data.items[2].name`. */
export function jsonPathText(root: string, path: readonly (string | number)[]): string {
  let text = root;
  for (const step of path) text += typeof step === 'number' ? `[${step}]` : `.${step}`;
  return text;
}

const NOT_JSON: unique symbol = Symbol('not JSON');
const TOO_DEEP = `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`;

/** One walk's settings and, once it fails, its problem: the path is built on the way back up, so good JSON costs none. */
class Walk {
  readonly path: (string | number)[] = [];
  message = '';
  tooDeep = false;
  constructor(
    readonly copy: boolean,
    readonly refuseProtoKeys: boolean,
    readonly ancestors: Set<object> | undefined,
    readonly maxDepth: number,
  ) {}

  fail(message: string): typeof NOT_JSON {
    this.message = message;
    return NOT_JSON;
  }

  within(step: string | number): typeof NOT_JSON {
    this.path.push(step);
    return NOT_JSON;
  }
}

/** Scalars are decided in place: most members are one, and a call per member is what a walk costs. */
function member(value: unknown, depth: number, walk: Walk): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : walk.fail('expected a finite number');
    case 'object':
      return value === null ? null : container(value, depth, walk);
    default:
      return walk.fail(`expected JSON, received ${typeof value}`);
  }
}

function container(value: object, depth: number, walk: Walk): unknown {
  if (depth >= walk.maxDepth) {
    walk.tooDeep = true;
    return walk.fail(TOO_DEEP);
  }
  const ancestors = walk.ancestors;
  if (ancestors !== undefined) {
    if (ancestors.has(value)) return walk.fail('expected JSON, found a cycle');
    ancestors.add(value);
  }
  const read = Array.isArray(value) ? array(value, depth, walk) : object(value, depth, walk);
  ancestors?.delete(value);
  return read;
}

function array(value: unknown[], depth: number, walk: Walk): unknown {
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return walk.fail('expected plain JSON, found a toJSON method');
  const copy: unknown[] | undefined = walk.copy ? [] : undefined;
  for (let index = 0; index < value.length; index++) {
    const item = member(value[index], depth + 1, walk);
    if (item === NOT_JSON) return walk.within(index);
    copy?.push(item);
  }
  return copy ?? value;
}

function object(value: object, depth: number, walk: Walk): unknown {
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return walk.fail('expected a plain JSON object');
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return walk.fail('expected plain JSON, found a toJSON method');
  const copy: Record<string, unknown> | undefined = walk.copy ? {} : undefined;
  // An indexed loop: until this is optimized, an array iterator would cost per key.
  const keys = Object.keys(value);
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index] as string;
    if (key === '__proto__' && walk.refuseProtoKeys) {
      walk.fail('the key "__proto__" is not allowed');
      return walk.within(key);
    }
    const item = member((value as Record<string, unknown>)[key], depth + 1, walk);
    if (item === NOT_JSON) return walk.within(key);
    if (copy === undefined) continue;
    // An own `__proto__` key (JSON.parse makes one) must stay a key, not become the copy's prototype.
    if (key === '__proto__') Object.defineProperty(copy, key, { value: item, writable: true, enumerable: true, configurable: true });
    else copy[key] = item;
  }
  return copy ?? value;
}
