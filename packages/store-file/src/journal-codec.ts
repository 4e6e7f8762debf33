import * as crypto from 'node:crypto';
import type { JsonValue } from '@sessionfold/core/kernel';
import { isEventSchemaVersion } from '@sessionfold/core/store-kit';
import { readCanonicalHead } from './canonical-head.js';

/**
 * One line of a journal, as stored: `<sha256 hex of PAYLOAD> <PAYLOAD>\n`. An event's payload names its
 * stream, so a line or a whole journal found under another stream's name is caught, and carries `more: true`
 * on every line of a batch but the last, so a batch cut short by a crash can be told apart from a complete
 * one and dropped whole. Lines written by release 0.1.0 have no `stream`: their journal's file name says it.
 * `schemaVersion` is written only when it is not 1, so lines written before event versions existed, and the
 * lines of events that never name a version, read the same and stay byte-identical. `data` is always the last
 * member (release 0.1.0 wrote it last too), so a stored read can take its JSON text without parsing it.
 */
export interface EventLine {
  stream?: string;
  revision: number;
  position: number;
  recordedAt: string;
  type: string;
  eventId?: string;
  /** Absent means 1. */
  schemaVersion?: number;
  more?: true;
  data: JsonValue;
}

const HASH_HEX = 64;
const SPACE = 0x20;
const hashHex: (data: Uint8Array | string) => string =
  typeof crypto.hash === 'function' ? (data) => crypto.hash('sha256', data, 'hex') : (data) => crypto.createHash('sha256').update(data).digest('hex');

/** Lowercase hex sha256 of `data` (bytes, or a string taken as UTF-8). */
export function sha256Hex(data: Uint8Array | string): string {
  return hashHex(data);
}

/** Frames a payload as a journal line, newline included. */
export function frameLine(payload: string): string {
  return `${hashHex(payload)} ${payload}\n`;
}

/** The payload of an event line of `stream`; `dataJson` is already serialized (validation did that once). */
export function eventPayload(
  stream: string,
  revision: number,
  position: number,
  recordedAt: string,
  type: string,
  eventId: string | undefined,
  more: boolean,
  dataJson: string,
  schemaVersion = 1,
): string {
  return eventPayloadJson(JSON.stringify(stream), revision, position, JSON.stringify(recordedAt), JSON.stringify(type), eventId, more, dataJson, schemaVersion);
}

/** `eventPayload` with `stream`, `recordedAt` and `type` already as JSON strings: a flush serializes each once. */
export function eventPayloadJson(
  streamJson: string,
  revision: number,
  position: number,
  recordedAtJson: string,
  typeJson: string,
  eventId: string | undefined,
  more: boolean,
  dataJson: string,
  schemaVersion = 1,
): string {
  return (
    `{"stream":${streamJson},"revision":${revision},"position":${position},"recordedAt":${recordedAtJson},"type":${typeJson}` +
    `${eventId === undefined ? '' : `,"eventId":${JSON.stringify(eventId)}`}${schemaVersion === 1 ? '' : `,"schemaVersion":${schemaVersion}`}` +
    `${more ? ',"more":true' : ''},"data":${dataJson}}`
  );
}

/**
 * Checks the framing and checksum of the line `buf[start, end)` (newline excluded) and returns its parsed
 * payload, or a reason it is damaged.
 */
export function decodeLine(buf: Buffer, start: number, end: number): { value: unknown } | { reason: string } {
  const damage = frameDamage(buf, start, end);
  if (damage !== undefined) return { reason: damage };
  try {
    return { value: JSON.parse(buf.toString('utf8', start + HASH_HEX + 1, end)) as unknown };
  } catch (error) {
    return { reason: `bad JSON (${(error as Error).message})` };
  }
}

/** Why the line `buf[start, end)` is not a `<sha256> <payload>` line whose checksum matches, or undefined. */
function frameDamage(buf: Buffer, start: number, end: number): string | undefined {
  if (end - start < HASH_HEX + 2 || buf[start + HASH_HEX] !== SPACE) return 'not a "<sha256> <json>" line';
  const stored = buf.toString('latin1', start, start + HASH_HEX);
  if (stored !== hashHex(buf.subarray(start + HASH_HEX + 1, end))) return 'checksum mismatch';
  return undefined;
}

/** The last member of every event payload: what precedes it holds only scalars, whose text cannot contain this. */
const DATA_MEMBER = Buffer.from(',"data":');
const CLOSE_BRACE = 0x7d;

/**
 * `decodeLine` for a stored read: the checksum checked, the payload parsed without its data, and the data's JSON
 * text as `dataJson` (the checksum vouches for it: it is the text the writer serialized). The head is read by
 * `readCanonicalHead` when the writer's shape is met, else parsed as JSON; a payload not shaped
 * `{…,"data":<text>}` is parsed whole and its data serialized.
 */
export function decodeStoredLine(buf: Buffer, start: number, end: number): { value: unknown } | { reason: string } {
  const damage = frameDamage(buf, start, end);
  if (damage !== undefined) return { reason: damage };
  const payload = start + HASH_HEX + 1;
  if (buf[end - 1] === CLOSE_BRACE) {
    const head = readCanonicalHead(buf, payload, end);
    if (head !== undefined) {
      const { stream, revision, position, recordedAt, type, eventId, schemaVersion, more } = head;
      const dataJson = buf.toString('utf8', head.dataMember + DATA_MEMBER.length, end - 1);
      return { value: { stream, revision, position, recordedAt, type, eventId, schemaVersion, more, dataJson } };
    }
  }
  const member = buf.indexOf(DATA_MEMBER, payload);
  try {
    if (member !== -1 && member < end && buf[end - 1] === CLOSE_BRACE) {
      const head = JSON.parse(`${buf.toString('utf8', payload, member)}}`) as Record<string, unknown>;
      head.dataJson = buf.toString('utf8', member + DATA_MEMBER.length, end - 1);
      return { value: head };
    }
    const value = JSON.parse(buf.toString('utf8', payload, end)) as unknown;
    if (typeof value !== 'object' || value === null || !('data' in value)) return { value };
    const { data, ...head } = value as Record<string, unknown>;
    return { value: { ...head, dataJson: JSON.stringify(data) } };
  } catch (error) {
    return { reason: `bad JSON (${(error as Error).message})` };
  }
}

/** True when `tail` (bytes after the last newline) is a whole valid line whose newline was replaced by one other byte. */
export function isLineMissingItsNewline(tail: Buffer): boolean {
  if (tail.length < HASH_HEX + 3) return false;
  return 'value' in decodeLine(tail, 0, tail.length - 1);
}

/** An event line without its data: what `asEventHead` checks. */
export type EventHead = Omit<EventLine, 'data'>;

/** Validates a parsed payload as an event line, or returns why it is not one. */
export function asEventLine(value: unknown): EventLine | string {
  const head = asEventHead(value);
  if (typeof head === 'string') return head;
  if (!('data' in head)) return 'data is missing';
  return head as EventLine;
}

/** Validates every member of an event line's payload but `data`, or returns why it is not one. */
export function asEventHead(value: unknown): EventHead | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'payload is not an object';
  const v = value as Record<string, unknown>;
  if (v.stream !== undefined && typeof v.stream !== 'string') return 'stream is not a string';
  if (!isPositiveInt(v.revision)) return 'revision is not an integer ≥ 1';
  if (!isPositiveInt(v.position)) return 'position is not an integer ≥ 1';
  if (typeof v.recordedAt !== 'string') return 'recordedAt is not a string';
  if (typeof v.type !== 'string' || v.type.length === 0) return 'type is not a string';
  if (v.eventId !== undefined && typeof v.eventId !== 'string') return 'eventId is not a string';
  if (v.schemaVersion !== undefined && !isEventSchemaVersion(v.schemaVersion)) return 'schemaVersion is not an integer from 1 to 2147483647';
  if (v.more !== undefined && v.more !== true) return 'more is not true';
  return v as unknown as EventHead;
}

/** An integer ≥ 1 within the safe range. */
export function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

/** Why a line that names `named` is not where it belongs. */
export function misplaced(named: string): string {
  return `the line names stream ${JSON.stringify(named).slice(1, -1)}: it belongs to another journal`;
}
