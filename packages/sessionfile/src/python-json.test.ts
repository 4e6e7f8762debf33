import { fc, test } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonValue } from './json-value.js';
import { pythonJsonDumps, pythonJsonNumber, pythonJsonString } from './python-json.js';
import { startPythonDumps, type PythonDumps } from './python-dumps.fixture.js';
import { propertyRuns } from './property-runs.fixture.js';

let python: PythonDumps;
beforeAll(() => {
  python = startPythonDumps();
});
afterAll(async () => {
  await python.close();
});

const matchesPython = async (value: JsonValue): Promise<void> => {
  expect(pythonJsonDumps(value)).toBe(await python.dumps(value));
};

describe('pythonJsonDumps', () => {
  it('writes empty containers inline and nests with a two-space indent and no trailing newline', async () => {
    const value = { a: [], b: {}, c: [1, [2, {}], { d: null }], e: { f: true, g: false } };
    expect(pythonJsonDumps(value)).toBe(
      '{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    [\n      2,\n      {}\n    ],\n    {\n      "d": null\n    }\n  ],\n' +
        '  "e": {\n    "f": true,\n    "g": false\n  }\n}',
    );
    await matchesPython(value);
  });

  it('keeps key order as inserted rather than sorting', async () => {
    const value = { zebra: 1, apple: 2, mango: { y: 1, b: 2 } };
    expect(pythonJsonDumps(value).indexOf('zebra')).toBeLessThan(pythonJsonDumps(value).indexOf('apple'));
    await matchesPython(value);
  });

  it('escapes non-ASCII as lowercase \\uXXXX, astral characters as surrogate pairs, and controls', async () => {
    expect(pythonJsonString('é😀\u007f\u0001"\\\n\r\t\b\f/')).toBe('"\\u00e9\\ud83d\\ude00\\u007f\\u0001\\"\\\\\\n\\r\\t\\b\\f/"');
    await matchesPython(['é😀 ✓ 中文 \u2028\u2029', '\u0000\u001f\u007f', 'lone \ud800 and \udfff', { ключ: 'значение' }]);
  });

  it('writes safe integers as Python ints and every other number as Python prints a float', async () => {
    const cases: [number, string][] = [
      [0, '0'],
      [-0, '-0.0'],
      [-17, '-17'],
      [Number.MAX_SAFE_INTEGER, '9007199254740991'],
      [2 ** 53, '9007199254740992.0'],
      [1e16, '1e+16'],
      [1.5e300, '1.5e+300'],
      [-2.5e20, '-2.5e+20'],
      [0.1, '0.1'],
      [1 / 3, '0.3333333333333333'],
      [123456.789, '123456.789'],
      [0.0001, '0.0001'],
      [0.00001, '1e-05'],
      [-1.25e-7, '-1.25e-07'],
      [5e-324, '5e-324'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
    ];
    for (const [value, text] of cases) expect(pythonJsonNumber(value)).toBe(text);
    expect(Object.is(JSON.parse(pythonJsonNumber(-0)), -0)).toBe(true);
    await matchesPython(cases.map(([value]) => value));
  });

  it('refuses values JSON cannot carry', () => {
    expect(() => pythonJsonNumber(Number.NaN)).toThrow(TypeError);
    expect(() => pythonJsonNumber(Infinity)).toThrow(TypeError);
    expect(() => pythonJsonDumps([() => 1] as unknown as JsonValue)).toThrow(TypeError);
  });

  test.prop([fc.jsonValue({ stringUnit: 'binary', maxDepth: 4 })], { numRuns: propertyRuns(150) })(
    'writes the same bytes as python3 for any JSON value',
    async (value) => {
      await matchesPython(value as JsonValue);
    },
  );

  test.prop([fc.double({ noNaN: true, noDefaultInfinity: true })], { numRuns: propertyRuns(300) })(
    'writes every finite double as python3 does',
    async (value) => {
      expect(pythonJsonNumber(value)).toBe(await python.dumps(value));
    },
  );
});
