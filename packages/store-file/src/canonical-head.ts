/**
 * Reading the members before `data` of an event payload written by `eventPayloadJson` without `JSON.parse`: a
 * stored read spent a fifth of its time parsing these few members and creating, for every line, the same
 * stream, type and commit-time strings as the line before. Only the exact shape the writer produces is read
 * here (members in its order, plain ASCII strings without escapes, integers without sign, fraction or leading
 * zero); anything else returns undefined and the caller parses the payload as JSON, so no line reads
 * differently from what `JSON.parse` gives.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const ZERO = 0x30;
const NINE = 0x39;
const DEL = 0x7f;
const SPACE = 0x20;

/** The members of an event payload before `data`, with the offset of its `,"data":`. */
export interface CanonicalHead {
  stream: string;
  revision: number;
  position: number;
  recordedAt: string;
  type: string;
  eventId: string | undefined;
  schemaVersion: number | undefined;
  more: true | undefined;
  /** Offset of the `,` that starts the `"data"` member. */
  dataMember: number;
}

/**
 * The strings of the line read before, reused when a line's bytes are the same: consecutive lines of a journal
 * share their stream and mostly their type and commit time, and one string instead of a million also lets the
 * CLI's per-line serializing cache (`JsonStrings`) hit by identity.
 */
const last = { stream: '', type: '', recordedAt: '' };

/** Where the reading is: one module-level cursor (the reading is synchronous), so a line allocates no cursor. */
const cursor = { at: 0 };

/** Reads the head of the payload `buf[start, end)` as `eventPayloadJson` writes it, or undefined when it is shaped otherwise. */
export function readCanonicalHead(buf: Buffer, start: number, end: number): CanonicalHead | undefined {
  cursor.at = start;
  if (!expect(buf, cursor, '{"stream":')) return undefined;
  const stream = stringAt(buf, cursor, end, last.stream);
  if (stream === undefined || !expect(buf, cursor, ',"revision":')) return undefined;
  last.stream = stream;
  const revision = integerAt(buf, cursor, end);
  if (revision === undefined || !expect(buf, cursor, ',"position":')) return undefined;
  const position = integerAt(buf, cursor, end);
  if (position === undefined || !expect(buf, cursor, ',"recordedAt":')) return undefined;
  const recordedAt = stringAt(buf, cursor, end, last.recordedAt);
  if (recordedAt === undefined || !expect(buf, cursor, ',"type":')) return undefined;
  last.recordedAt = recordedAt;
  const type = stringAt(buf, cursor, end, last.type);
  if (type === undefined) return undefined;
  last.type = type;
  let eventId: string | undefined;
  let schemaVersion: number | undefined;
  let more: true | undefined;
  if (expect(buf, cursor, ',"eventId":')) {
    eventId = stringAt(buf, cursor, end, '');
    if (eventId === undefined) return undefined;
  }
  if (expect(buf, cursor, ',"schemaVersion":')) {
    schemaVersion = integerAt(buf, cursor, end);
    if (schemaVersion === undefined) return undefined;
  }
  if (expect(buf, cursor, ',"more":true')) more = true;
  const dataMember = cursor.at;
  if (!expect(buf, cursor, ',"data":')) return undefined;
  return { stream, revision, position, recordedAt, type, eventId, schemaVersion, more, dataMember };
}

/** Moves past `text` (ASCII) when the bytes at the cursor are it; false, not moving, otherwise. */
function expect(buf: Buffer, cursor: { at: number }, text: string): boolean {
  const at = cursor.at;
  if (at + text.length > buf.length) return false;
  for (let i = 0; i < text.length; i++) if (buf[at + i] !== text.charCodeAt(i)) return false;
  cursor.at = at + text.length;
  return true;
}

/**
 * A JSON string of printable ASCII without escapes at the cursor, or undefined. `reuse` (such a string too) is
 * checked first, in one pass: when the bytes spell it, it is returned rather than a new string of the same text.
 */
function stringAt(buf: Buffer, cursor: { at: number }, end: number, reuse: string): string | undefined {
  const open = cursor.at;
  if (buf[open] !== QUOTE) return undefined;
  const length = reuse.length;
  if (open + length + 1 < end && buf[open + length + 1] === QUOTE) {
    let same = true;
    for (let i = 0; i < length; i++) {
      if (reuse.charCodeAt(i) !== buf[open + 1 + i]) {
        same = false;
        break;
      }
    }
    if (same) {
      cursor.at = open + length + 2;
      return reuse;
    }
  }
  let close = open + 1;
  for (; close < end; close++) {
    const byte = buf[close] as number;
    if (byte === QUOTE) break;
    if (byte === BACKSLASH || byte < SPACE || byte >= DEL) return undefined;
  }
  if (close >= end) return undefined;
  cursor.at = close + 1;
  return buf.toString('latin1', open + 1, close);
}

/** A JSON integer ≥ 0 of at most 15 digits (no leading zero) at the cursor, or undefined. */
function integerAt(buf: Buffer, cursor: { at: number }, end: number): number | undefined {
  const first = cursor.at;
  let at = first;
  let value = 0;
  for (; at < end; at++) {
    const byte = buf[at] as number;
    if (byte < ZERO || byte > NINE) break;
    value = value * 10 + (byte - ZERO);
  }
  const digits = at - first;
  if (digits === 0 || digits > 15 || (digits > 1 && buf[first] === ZERO) || (at < end && buf[at] !== COMMA)) return undefined;
  cursor.at = at;
  return value;
}
