import { describe, expect, it } from 'vitest';
import { cloneJson } from './json.js';

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

  it('copies what is not plain JSON as structuredClone does', () => {
    const when = new Date('2026-01-01T00:00:00.000Z');
    const copy = cloneJson({ when, bytes: new Uint8Array([1, 2]) });
    expect(copy.when).toEqual(when);
    expect(copy.when).not.toBe(when);
    expect(copy.bytes).toEqual(new Uint8Array([1, 2]));
  });
});
