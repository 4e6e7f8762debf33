import type { JsonValue } from './json-value.js';

/**
 * Serialises `value` exactly as Python's `json.dumps(value, indent=2)` does: two-space indent, separators
 * `,` and `: `, ASCII only (`\uXXXX`, surrogate pairs for astral characters), key order kept, no final newline.
 */
export function pythonJsonDumps(value: JsonValue): string {
  const out: string[] = [];
  write(value, '', out);
  return out.join('');
}

function write(value: JsonValue, indent: string, out: string[]): void {
  if (value === null) {
    out.push('null');
  } else if (typeof value === 'string') {
    out.push(pythonJsonString(value));
  } else if (typeof value === 'number') {
    out.push(pythonJsonNumber(value));
  } else if (typeof value === 'boolean') {
    out.push(value ? 'true' : 'false');
  } else if (Array.isArray(value)) {
    if (value.length === 0) {
      out.push('[]');
      return;
    }
    const inner = `${indent}  `;
    out.push('[');
    value.forEach((item, i) => {
      out.push(i === 0 ? '\n' : ',\n', inner);
      write(item, inner, out);
    });
    out.push('\n', indent, ']');
  } else if (typeof value === 'object') {
    // Like JSON.stringify, a property holding `undefined` is absent (Python has no such value).
    const entries = Object.entries(value).filter(([, item]) => item !== undefined);
    if (entries.length === 0) {
      out.push('{}');
      return;
    }
    const inner = `${indent}  `;
    out.push('{');
    entries.forEach(([key, item], i) => {
      out.push(i === 0 ? '\n' : ',\n', inner, pythonJsonString(key), ': ');
      write(item, inner, out);
    });
    out.push('\n', indent, '}');
  } else {
    throw new TypeError(`A ${typeof value} is not JSON.`);
  }
}

const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const SHORT_ESCAPES: Record<number, string> = {
  0x22: '\\"',
  0x5c: '\\\\',
  0x0a: '\\n',
  0x0d: '\\r',
  0x09: '\\t',
  0x08: '\\b',
  0x0c: '\\f',
};

/** A JSON string literal as Python writes it with `ensure_ascii=True`: every code unit outside ' '..'~' escaped. */
export function pythonJsonString(text: string): string {
  if (PLAIN.test(text)) return `"${text}"`;
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    const short = SHORT_ESCAPES[unit];
    if (short !== undefined) out += short;
    else if (unit >= 0x20 && unit <= 0x7e) out += text[i];
    else out += `\\u${unit.toString(16).padStart(4, '0')}`;
  }
  return `${out}"`;
}

/**
 * A number as Python writes it. Safe integers are Python ints; every other finite number (`-0` included) is
 * a Python float, in `repr` form: shortest round-trip digits, exponent when < 1e-4 or >= 1e16.
 */
export function pythonJsonNumber(value: number): string {
  if (!Number.isFinite(value)) throw new TypeError(`${String(value)} is not a JSON number.`);
  if (Object.is(value, -0)) return '-0.0'; // Python ints have no negative zero; its float keeps the sign, as JSON.parse does
  if (Number.isSafeInteger(value)) return String(value);
  const [mantissa = '', exponentText = '0'] = value.toExponential().split('e');
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const decimalPoint = Number(exponentText) + 1; // value = 0.<digits> * 10^decimalPoint
  let body: string;
  if (decimalPoint > -4 && decimalPoint <= 16) {
    if (decimalPoint <= 0) body = `0.${'0'.repeat(-decimalPoint)}${digits}`;
    else if (decimalPoint >= digits.length) body = `${digits}${'0'.repeat(decimalPoint - digits.length)}.0`;
    else body = `${digits.slice(0, decimalPoint)}.${digits.slice(decimalPoint)}`;
  } else {
    const exponent = decimalPoint - 1;
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : '';
    const sign = exponent < 0 ? '-' : '+';
    body = `${digits[0] ?? ''}${fraction}e${sign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return negative ? `-${body}` : body;
}
