import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from './errors.js';
import { cloneJson, MAX_JSON_DEPTH, readJson } from './json.js';

/** `SESSIONFOLD_PROPERTY_RUNS` when set (a long run is one variable away), else `fallback`. */
const propertyRuns = (fallback: number): number => Number(process.env['SESSIONFOLD_PROPERTY_RUNS'] ?? fallback);

/** `levels` arrays nested in each other around a 0: `nested(2)` is `[[0]]`. */
function nested(levels: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/** `value` with every object given a null prototype, as `Object.create(null)` makes them. */
function withNullPrototypes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withNullPrototypes);
  if (typeof value !== 'object' || value === null) return value;
  const bare: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(value)) bare[key] = withNullPrototypes((value as Record<string, unknown>)[key]);
  return bare;
}

/** Every object and array inside `value`, `value` included when it is one. */
function containers(value: unknown, found: object[] = []): object[] {
  if (typeof value !== 'object' || value === null) return found;
  found.push(value);
  for (const key of Object.keys(value)) containers((value as Record<string, unknown>)[key], found);
  return found;
}

/** The path from `root` to `target` (by identity), keys and indexes; undefined when it is not inside. */
function pathTo(root: unknown, target: object): (string | number)[] | undefined {
  if (root === target) return [];
  if (typeof root !== 'object' || root === null) return undefined;
  for (const key of Object.keys(root)) {
    const rest = pathTo((root as Record<string, unknown>)[key], target);
    if (rest !== undefined) return [Array.isArray(root) ? Number(key) : key, ...rest];
  }
  return undefined;
}

/** `[1, <hole>, 3]`. */
function holey(): unknown[] {
  const value = [1, 2, 3];
  delete value[1];
  return value;
}

class Point {
  x = 1;
}

/**
 * Values JSON cannot carry as they are; `root` is the value they are put into (for a cycle). A value is refused at
 * itself, or at the path given after it inside it.
 */
const NOT_JSON: Array<[string, (root: object) => unknown, ...(string | number)[]]> = [
  ['undefined', () => undefined],
  ['NaN', () => Number.NaN],
  ['Infinity', () => Number.NEGATIVE_INFINITY],
  ['a function', () => () => 1],
  ['a symbol', () => Symbol('s')],
  ['a bigint', () => 1n],
  ['a Date', () => new Date(0)],
  ['a Map', () => new Map([[1, 2]])],
  ['a class instance', () => new Point()],
  ['a boxed number', () => Object(1)],
  ['a typed array', () => new Uint8Array(2)],
  ['an array with a hole', () => holey(), 1],
  ['an object with a toJSON method', () => ({ toJSON: () => 1 })],
  ['a cycle', (root) => root],
];

describe('readJson: the one JSON check', () => {
  it('accepts every JSON value, plain or with null prototypes, and copies it as JSON text gives it back, sharing nothing', () => {
    const json = fc.jsonValue({ maxDepth: 4 });
    const value = fc.oneof(json, json.map(withNullPrototypes), fc.constantFrom<unknown>(-0, [-0], { z: -0 }));
    fc.assert(
      fc.property(value, (given) => {
        const checked = readJson(given);
        expect(checked.problem).toBeUndefined();
        expect(checked.value).toBe(given);
        const { value: copy, problem } = readJson(given, { copy: true });
        expect(problem).toBeUndefined();
        // Strict: -0 and 0 told apart, prototypes compared, keys in the same order.
        expect(copy).toStrictEqual(JSON.parse(JSON.stringify(given)));
        expect(Object.keys(copy ?? {})).toEqual(Object.keys(given ?? {}));
        const originals = new Set(containers(given));
        expect(containers(copy).filter((part) => originals.has(part))).toEqual([]);
      }),
      { numRuns: propertyRuns(300) },
    );
  });

  it.each(NOT_JSON)('refuses a value holding %s anywhere, naming where it is', (_name, make, ...inside) => {
    const host = fc.oneof(fc.array(fc.jsonValue({ maxDepth: 3 })), fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })));
    fc.assert(
      fc.property(host, fc.nat(), fc.boolean(), (root, pick, copy) => {
        const places = containers(root);
        const place = places[pick % places.length] as Record<string, unknown> | unknown[];
        const bad = make(root);
        const at = pathTo(root, place) as (string | number)[];
        let step: string | number;
        if (Array.isArray(place)) step = place.push(bad) - 1;
        else {
          step = `bad${Object.keys(place).length}`;
          place[step] = bad;
        }
        const { problem, value } = readJson(root, { copy });
        expect(value).toBeUndefined();
        expect(problem?.path).toEqual([...at, step, ...inside]);
      }),
      { numRuns: propertyRuns(50) },
    );
  });

  it(`accepts ${MAX_JSON_DEPTH} levels of arrays and objects, and refuses one more (or a cycle) without running out of stack`, () => {
    expect(readJson(nested(MAX_JSON_DEPTH)).problem).toBeUndefined();
    expect(readJson(nested(MAX_JSON_DEPTH + 1)).problem).toEqual({ path: [], message: `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` });
    expect(readJson(nested(100_000), { copy: true }).problem?.path).toEqual([]);
    const loop: Record<string, unknown> = { a: [1] };
    (loop.a as unknown[]).push({ back: loop });
    expect(readJson(loop).problem).toEqual({ path: ['a', 1, 'back'], message: 'expected JSON, found a cycle' });
    const shared = { n: 1 };
    expect(readJson({ one: shared, two: [shared] }).problem).toBeUndefined();
  });

  it('reports what reading the value throws, with the thrown error as cause', () => {
    const failure = new Error('no text');
    const value = {
      get text(): string {
        throw failure;
      },
    };
    expect(readJson({ inner: value })).toEqual({ problem: { path: [], message: 'could not be read: no text', cause: failure } });
  });

  it('keeps an own "__proto__" key a key, or refuses it when asked', () => {
    const parsed = JSON.parse('{"x": [{"__proto__": {"polluted": true}}]}') as unknown;
    expect(readJson(parsed).problem).toBeUndefined();
    expect(readJson(parsed, { refuseProtoKeys: true }).problem).toEqual({ path: ['x', 0, '__proto__'], message: 'the key "__proto__" is not allowed' });
  });
});

describe('cloneJson', () => {
  it('copies every level, so changing the copy leaves the original as it was', () => {
    const original = { a: [1, { b: 'x' }, null], c: { d: true, e: { f: 2.5 } } };
    const copy = cloneJson(original);
    expect(copy).toEqual(original);
    copy.a.push(4);
    (copy.a[1] as { b: string }).b = 'y';
    copy.c.e.f = 0;
    expect(original).toEqual({ a: [1, { b: 'x' }, null], c: { d: true, e: { f: 2.5 } } });
  });

  it('keeps the order of keys', () => {
    expect(Object.keys(cloneJson({ z: 1, a: 2, m: 3 }))).toEqual(['z', 'a', 'm']);
  });

  it('keeps an own "__proto__" key a key, never the prototype of the copy', () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as Record<string, unknown>;
    const copy = cloneJson(parsed);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'x']);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it(`copies values nested deeper than ${MAX_JSON_DEPTH} levels (a snapshot around a state at the limit), but not a cycle`, () => {
    const snapshot = { revision: 1, state: nested(MAX_JSON_DEPTH) };
    expect(cloneJson(snapshot)).toEqual(snapshot);
    const loop: Record<string, unknown> = { state: nested(MAX_JSON_DEPTH) };
    loop.self = loop;
    expect(() => cloneJson(loop)).toThrow('value.self: expected JSON, found a cycle');
  });

  it('refuses what is not plain JSON with InvalidInputError naming where', () => {
    expect(() => cloneJson({ when: [new Date(0)] })).toThrow(InvalidInputError);
    expect(() => cloneJson({ when: [new Date(0)] })).toThrow('value.when[0]: expected a plain JSON object');
  });
});
