import { describe, expect, it } from 'vitest';
import { readCanonicalHead } from './canonical-head.js';
import { decodeLine, decodeStoredLine, eventPayload, frameLine } from './journal-codec.js';

/** `decodeStoredLine` of a framed payload, and the same payload parsed as JSON. */
function decodeBoth(payload: string): { stored: unknown; parsed: unknown } {
  const buf = Buffer.from(frameLine(payload));
  const stored = decodeStoredLine(buf, 0, buf.length - 1);
  const parsed = decodeLine(buf, 0, buf.length - 1);
  if (!('value' in stored) || !('value' in parsed)) throw new Error('the line should decode');
  return { stored: stored.value, parsed: parsed.value };
}

/** What a stored read makes of a parsed payload: its members but `data`, and the data as JSON text. */
function asStored(parsed: unknown): Record<string, unknown> {
  const { data, ...head } = parsed as Record<string, unknown>;
  return { ...head, dataJson: JSON.stringify(data) };
}

/** Members set to undefined read as absent, as `JSON.parse` leaves them. */
function defined(value: unknown): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([, member]) => member !== undefined));
}

describe('reading the head of an event line without JSON.parse', () => {
  it('reads what the writer writes as JSON.parse does, with and without eventId, schemaVersion and more', () => {
    const payloads = [
      eventPayload('s-1', 1, 7, '2026-01-01T00:00:00.000Z', 'Noted', undefined, false, '{"n":1}'),
      eventPayload('s-1', 2, 8, '2026-01-01T00:00:00.000Z', 'Noted', 'e-2', true, '[1,"}"]', 3),
      eventPayload('s-1', 123456789012345, 9, '2026-01-01T00:00:00.001Z', 'Other', undefined, true, '"text"'),
      eventPayload('', 10, 10, '', 'T', '', false, 'null', 2147483647),
    ];
    for (const payload of payloads) {
      const { stored, parsed } = decodeBoth(payload);
      expect(defined(stored)).toEqual(asStored(parsed));
    }
  });

  it("reads each line's own members where they differ from the line before's, also in one character of the same length", () => {
    const read = (payload: string) => readCanonicalHead(Buffer.from(payload), 0, payload.length);
    const lines = [
      ['stream-a', '2026-01-01T00:00:00.000Z', 'Noted'],
      ['stream-a', '2026-01-01T00:00:00.000Z', 'Noted'],
      ['stream-b', '2026-01-01T00:00:00.001Z', 'Notes'],
      ['stream-b', '2026-01-01T00:00:00.001Z', 'Noted'],
      ['stream-bb', '2026-01-01T00:00:00.001Z', 'Note'],
    ];
    const heads = lines.map(([stream, recordedAt, type], index) =>
      read(eventPayload(stream as string, index + 1, index + 1, recordedAt as string, type as string, undefined, false, '1')),
    );
    expect(heads.map((head) => [head?.stream, head?.recordedAt, head?.type])).toEqual(lines);
  });

  it('leaves any other shape to JSON.parse, which reads it as before', () => {
    const odd = [
      eventPayload('s\u00e9', 1, 1, '2026-01-01T00:00:00.000Z', 'Noted', undefined, false, '{}'),
      eventPayload('s', 1, 1, '2026-01-01T00:00:00.000Z', 'line\nbreak', undefined, false, '{}'),
      eventPayload('s', 1, 1, '2026-01-01T00:00:00.000Z', 'quote"d', undefined, false, '{}'),
      eventPayload('s', 1, 1, '2026-01-01T00:00:00.000Z', 'Noted', '\u{1f600}', false, '{}'),
      eventPayload('s', 1234567890123456, 1, '2026-01-01T00:00:00.000Z', 'Noted', undefined, false, '{}'),
      '{"revision":1,"position":1,"recordedAt":"2026-01-01T00:00:00.000Z","type":"Noted","data":{}}',
      '{"stream":"s","position":1,"revision":1,"recordedAt":"2026-01-01T00:00:00.000Z","type":"Noted","data":{}}',
      '{"stream":"s","revision":1.0,"position":1,"recordedAt":"2026-01-01T00:00:00.000Z","type":"Noted","data":{}}',
      '{"stream":"s","revision":1,"position":1,"recordedAt":"2026-01-01T00:00:00.000Z","type":"Noted","more":false,"data":{}}',
    ];
    for (const payload of odd) {
      expect(readCanonicalHead(Buffer.from(payload), 0, Buffer.byteLength(payload))).toBeUndefined();
      const { stored, parsed } = decodeBoth(payload);
      expect(stored).toEqual(asStored(parsed));
    }
  });

  it('reports a damaged head as bad JSON, as before', () => {
    const buf = Buffer.from(frameLine('{"stream":"s","revision":01,"position":1,"recordedAt":"x","type":"T","data":{}}'));
    expect(decodeStoredLine(buf, 0, buf.length - 1)).toMatchObject({ reason: expect.stringMatching(/^bad JSON/) });
  });
});
