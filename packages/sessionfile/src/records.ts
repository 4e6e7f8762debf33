import { z } from 'zod';
import { jsonObjectSchema, jsonValueSchema } from './json-value.js';

/** A count that can only grow from zero (compactions, tokens, turns). */
export const counterSchema = z.int().nonnegative();

/** Who and what a snapshot belongs to; compared field by field, in this order, before a resume. */
export const sessionIdentitySchema = z.strictObject({
  gameplan: z.string(),
  topic: z.string(),
  participants: z.array(z.string()),
  orchestrator: z.string(),
});
export type SessionIdentity = z.infer<typeof sessionIdentitySchema>;

/** Tokens a provider reported for one turn. */
export const usageSchema = z.strictObject({
  input_tokens: counterSchema,
  output_tokens: counterSchema,
});
export type Usage = z.infer<typeof usageSchema>;

/** What a tool returned; `ok: false` means `output` describes the failure. */
export const toolResultSchema = z.strictObject({
  ok: z.boolean(),
  output: jsonValueSchema,
});
export type ToolResult = z.infer<typeof toolResultSchema>;

/** A tool call made during a turn; `result` is `null` until the tool has answered. */
export const toolCallSchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  arguments: jsonObjectSchema,
  result: toolResultSchema.nullable(),
});
export type ToolCall = z.infer<typeof toolCallSchema>;

/** One participant's turn in the conversation: what it was given, what it said, the tools it called. */
export const turnSchema = z.strictObject({
  speaker: z.string(),
  input: z.string(),
  output: z.string(),
  tool_calls: z.array(toolCallSchema),
  usage: usageSchema.nullable(),
});
export type Turn = z.infer<typeof turnSchema>;

/** One line of the human-readable transcript, tagged by `type`. */
export const transcriptEntrySchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('user-message'), text: z.string() }),
  z.strictObject({ type: z.literal('assistant-message'), speaker: z.string(), text: z.string() }),
  z.strictObject({
    type: z.literal('assistant-tool-call'),
    speaker: z.string(),
    call_id: z.string(),
    tool: z.string(),
    arguments: jsonObjectSchema,
  }),
  z.strictObject({ type: z.literal('tool-result'), call_id: z.string(), ok: z.boolean(), output: jsonValueSchema }),
  z.strictObject({ type: z.literal('system-note'), text: z.string() }),
]);
export type TranscriptEntry = z.infer<typeof transcriptEntrySchema>;
/** The `type` tags a transcript entry may carry. */
export const TRANSCRIPT_ENTRY_TYPES = ['user-message', 'assistant-message', 'assistant-tool-call', 'tool-result', 'system-note'] as const;

/** The legacy phase fields every version may hold; each optional, type-checked when present. */
const legacyLoopShape = {
  turn_count: counterSchema.exactOptional(),
  phase: z.string().exactOptional(),
  phase_index: counterSchema.exactOptional(),
  phase_turn: counterSchema.exactOptional(),
  completed_phases: z.array(z.string()).exactOptional(),
};
/** Loop fields that only version 2 files may hold: opaque continuation state owned by the engine. */
export const CONTINUATION_FIELDS = ['runtime', 'scheduler'] as const;

/** `loop` in a version 1 file: legacy phase fields only. */
export const loopV1Schema = z.strictObject(legacyLoopShape);
/** `loop` in a version 2 file: legacy phase fields plus the suspended `runtime` and the `scheduler` state. */
export const loopSchema = z.strictObject({
  ...legacyLoopShape,
  runtime: jsonObjectSchema.exactOptional(),
  scheduler: jsonObjectSchema.exactOptional(),
});
export type LoopState = z.infer<typeof loopSchema>;
