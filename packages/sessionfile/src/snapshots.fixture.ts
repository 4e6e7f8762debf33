import { fc } from '@fast-check/vitest';
import type { SessionSnapshot } from './envelope.js';
import { identityFor } from './identity.js';
import type { JsonObject, JsonValue } from './json-value.js';
import type { LoopState, ToolCall, TranscriptEntry, Turn } from './records.js';

export const IDENTITY = identityFor('review-gameplan', 'Ship the release', ['writer', 'critic'], 'round-robin');

/** A snapshot holding at least one of every kind of record, a full legacy loop and a version 2 continuation. */
export function fullSnapshot(): SessionSnapshot {
  return {
    identity: structuredClone(IDENTITY),
    turns: [
      {
        speaker: 'writer',
        input: 'Draft the notes',
        output: 'Here are the notes — ✓',
        tool_calls: [
          { id: 'call-1', name: 'search', arguments: { query: 'changelog', limit: 5 }, result: { ok: true, output: ['a', 'b'] } },
          { id: 'call-2', name: 'fetch', arguments: {}, result: { ok: false, output: { error: 'timeout', after: 2.5 } } },
          { id: 'call-3', name: 'approve', arguments: { what: 'publish' }, result: null },
        ],
        usage: { input_tokens: 120, output_tokens: 48 },
      },
      { speaker: 'critic', input: '', output: 'Looks good', tool_calls: [], usage: null },
    ],
    transcript: [
      { type: 'user-message', text: 'Please write release notes 😀' },
      { type: 'assistant-message', speaker: 'writer', text: 'On it.' },
      { type: 'assistant-tool-call', speaker: 'writer', call_id: 'call-1', tool: 'search', arguments: { query: 'changelog', limit: 5 } },
      { type: 'tool-result', call_id: 'call-1', ok: true, output: ['a', 'b'] },
      { type: 'system-note', text: 'compacted 3 turns' },
    ],
    loop: {
      turn_count: 2,
      phase: 'drafting',
      phase_index: 1,
      phase_turn: 0,
      completed_phases: ['planning'],
      runtime: { pending: [{ kind: 'approval', call_id: 'call-3' }], usage: { total: 168 } },
      scheduler: { next: 'critic', round: 3 },
    },
    compactions: 1,
  };
}

/** The text of a version 1 file: a turn boundary with legacy loop fields and no continuation. */
export function versionOneText(): string {
  return JSON.stringify(
    {
      version: 1,
      identity: IDENTITY,
      turns: [{ speaker: 'writer', input: 'hi', output: 'hello', tool_calls: [], usage: null }],
      transcript: [{ type: 'assistant-message', speaker: 'writer', text: 'hello' }],
      loop: { turn_count: 1, phase: 'intro' },
      compactions: 0,
    },
    null,
    2,
  );
}

const text = fc.string({ unit: 'binary', maxLength: 12 });
const counter = fc.oneof(fc.nat({ max: 1000 }), fc.maxSafeNat());
const json = fc.jsonValue({ stringUnit: 'binary', maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
const jsonObject = fc.dictionary(text, json, { maxKeys: 4 }) as fc.Arbitrary<JsonObject>;

const toolCall: fc.Arbitrary<ToolCall> = fc.record({
  id: text,
  name: text,
  arguments: jsonObject,
  result: fc.option(fc.record({ ok: fc.boolean(), output: json }), { nil: null }),
});
const turn: fc.Arbitrary<Turn> = fc.record({
  speaker: text,
  input: text,
  output: text,
  tool_calls: fc.array(toolCall, { maxLength: 3 }),
  usage: fc.option(fc.record({ input_tokens: counter, output_tokens: counter }), { nil: null }),
});
const transcriptEntry: fc.Arbitrary<TranscriptEntry> = fc.oneof(
  fc.record({ type: fc.constant('user-message' as const), text }),
  fc.record({ type: fc.constant('assistant-message' as const), speaker: text, text }),
  fc.record({ type: fc.constant('assistant-tool-call' as const), speaker: text, call_id: text, tool: text, arguments: jsonObject }),
  fc.record({ type: fc.constant('tool-result' as const), call_id: text, ok: fc.boolean(), output: json }),
  fc.record({ type: fc.constant('system-note' as const), text }),
);
const loop: fc.Arbitrary<LoopState> = fc.record(
  {
    turn_count: counter,
    phase: text,
    phase_index: counter,
    phase_turn: counter,
    completed_phases: fc.array(text, { maxLength: 3 }),
    runtime: jsonObject,
    scheduler: jsonObject,
  },
  { requiredKeys: [] },
);

/** Any snapshot the format accepts. */
export const snapshotArbitrary: fc.Arbitrary<SessionSnapshot> = fc.record({
  identity: fc.record({ gameplan: text, topic: text, participants: fc.array(text, { maxLength: 4 }), orchestrator: text }),
  turns: fc.array(turn, { maxLength: 3 }),
  transcript: fc.array(transcriptEntry, { maxLength: 4 }),
  loop,
  compactions: counter,
});
