import { cloneJson, type JsonObject, type JsonValue } from '../kernel/json.js';
import { isJsonObject } from './json-schema.js';
import {
  newLifecycleRecord,
  type CompletionReceipt,
  type LifecycleRecord,
  type LogEntry,
  type SessionRecord,
  type SessionState,
  type SessionStreamState,
  type SessionSummary,
  type SessionSummaryState,
  type StagedObject,
  type TranscriptEntry,
} from './model.js';

export type { TranscriptEntry } from './types.js';

/** A staged object as `object()` returns it: name and media type made safe for a download header. */
export interface StoredObject {
  fileName: string;
  mediaType: string;
  bytes: Uint8Array;
}

/** The `kind` of a log text that is a persisted context record (JSON with a `kind` field), if it is one. */
function persistedContextKind(text: string): JsonValue | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(text) as JsonValue;
    return isJsonObject(parsed) ? parsed.kind : undefined;
  } catch {
    return undefined;
  }
}

/** The content a box-created record carries, if `kind` is one. */
function boxContent(kind: JsonValue | undefined): JsonObject | undefined {
  if (!isJsonObject(kind) || kind.type !== 'box_created') return undefined;
  return isJsonObject(kind.content) ? kind.content : undefined;
}

/** The text a reader sees for a log entry: a box's text when the entry is a persisted box, else its raw text. */
export function displayText(entry: Pick<LogEntry, 'text'>): string {
  return shownText(entry, boxContent(persistedContextKind(entry.text)));
}

/** `displayText` for an entry whose box content was already parsed (each entry's text is parsed once). */
function shownText(entry: Pick<LogEntry, 'text'>, content: JsonObject | undefined): string {
  return typeof content?.text === 'string' ? content.text : entry.text;
}

/**
 * The transcript line of a log entry, or undefined for entries that are not part of the conversation
 * (tool traffic, objects, and system messages not marked `transcriptRole: "system"`).
 */
export function transcriptEntry(entry: LogEntry): TranscriptEntry | undefined {
  const content = boxContent(persistedContextKind(entry.text));
  return transcriptLine(entry, content, shownText(entry, content));
}

function transcriptLine(entry: LogEntry, content: JsonObject | undefined, text: string): TranscriptEntry | undefined {
  const metadata = isJsonObject(content?.metadata) ? content.metadata : undefined;
  let role: TranscriptEntry['role'];
  switch (entry.role) {
    case 'user-message':
      role = 'user';
      break;
    case 'assistant-message':
      role = 'assistant';
      break;
    case 'system-error':
      role = 'system';
      break;
    case 'system-message':
      if (!content || !isJsonObject(content.metadata) || content.metadata.transcriptRole !== 'system') return undefined;
      role = 'system';
      break;
    default:
      return undefined;
  }
  const item: TranscriptEntry = { role, content: text, boxId: entry.boxId };
  if (content && Array.isArray(content.objects)) item.objects = cloneJson(content.objects);
  if (metadata) {
    if (Object.hasOwn(metadata, 'inputKind')) item.inputKind = cloneJson(metadata.inputKind as JsonValue);
    if (Object.hasOwn(metadata, 'externalEventId')) item.externalEventId = cloneJson(metadata.externalEventId as JsonValue);
    if (Array.isArray(metadata.attachments)) item.attachments = cloneJson(metadata.attachments);
    else if (isJsonObject(metadata.media)) item.attachments = [cloneJson(metadata.media)];
  }
  return item;
}

/** `[role]\ntext` of every log entry, separated by blank lines. */
export function transcriptText(entries: readonly LogEntry[]): string {
  return entries.map((entry) => `[${entry.role}]\n${displayText(entry)}`).join('\n\n');
}

/**
 * The record a caller sees: a copy of the lifecycle record whose state adds the view rebuilt from the
 * session log (`transcript`, `events`, `transcriptText`, `commands`, `objects`) to the control state, with the
 * application's `data` and `lastActivityAt`.
 */
export function materialise<S = JsonValue>(record: LifecycleRecord, state: SessionStreamState): SessionRecord<S> {
  const entries = state.log.flat();
  const transcript: TranscriptEntry[] = [];
  const blocks: string[] = [];
  const objects: StagedObject[] = [];
  for (const entry of entries) {
    const content = boxContent(persistedContextKind(entry.text));
    const text = shownText(entry, content);
    const line = transcriptLine(entry, content, text);
    if (line) transcript.push(line);
    if (entry.object) objects.push(cloneJson(entry.object));
    blocks.push(`[${entry.role}]\n${text}`);
  }
  const view = cloneJson(record.state) as SessionState;
  view.sessionId = record.id;
  view.transcript = transcript;
  view.events = cloneJson(entries);
  view.transcriptText = blocks.join('\n\n');
  view.commands = cloneJson(state.commands);
  view.objects = objects;
  // Built key by key, the state last as before: a rest copy spread again under a new key is V8's slow path.
  const materialised: Partial<Record<keyof SessionRecord, unknown>> = {};
  for (const key of Object.keys(record) as (keyof LifecycleRecord)[]) if (key !== 'state') materialised[key] = cloneJson(record[key]);
  materialised.state = view;
  // Records folded before `data` existed have none (undefined in their snapshots): null, as for a session never given any.
  materialised.data = state.data === undefined ? null : cloneJson(state.data);
  materialised.lastActivityAt = state.lastActivityAt ?? record.updatedAt;
  return materialised as SessionRecord<S>;
}

/** The record `list()` shows for a session: `summary: true` and a few state fields for an overview. */
export function summaryRecord(record: LifecycleRecord, state: SessionStreamState): SessionSummary {
  const control = record.state;
  const pick = (key: string): JsonValue => (Object.hasOwn(control, key) ? cloneJson(control[key] as JsonValue) : null);
  const overview: SessionSummaryState = {
    sessionType: pick('sessionType'),
    channel: pick('channel'),
    freeTime: pick('freeTime'),
    orchestration: pick('orchestration'),
    firstUserMessage: state.firstUserMessage,
    boxCount: state.logSize,
    eventCount: state.logSize,
    pendingTurn: Object.hasOwn(control, 'pendingTurn') ? cloneJson(control.pendingTurn as JsonValue) : false,
  };
  // Key by key, as `materialise` does (a list builds one per session); `summary` comes last, as it always has.
  const summary: Partial<Record<keyof SessionSummary, unknown>> = {};
  for (const key of Object.keys(record) as (keyof LifecycleRecord)[]) summary[key] = key === 'state' ? overview : cloneJson(record[key]);
  summary.lastActivityAt = state.lastActivityAt ?? record.updatedAt;
  summary.summary = true;
  return summary as SessionSummary;
}

/**
 * The record of a completed session known only by its catalog receipt (`summary`: as `list()` shows it). Its
 * state names the session object, the session it was and the receipt; its view is empty (the log went with the stream).
 */
export function receiptRecord(receipt: CompletionReceipt, summary: true): SessionSummary;
export function receiptRecord<S = JsonValue>(receipt: CompletionReceipt, summary?: false): SessionRecord<S>;
export function receiptRecord<S>(receipt: CompletionReceipt, summary = false): SessionRecord<S> | SessionSummary {
  const lifecycle = newLifecycleRecord({
    id: receipt.sessionObjectId,
    phase: 'complete',
    startedAt: receipt.createdAt ?? '',
    updatedAt: receipt.committedAt ?? '',
    state: {},
  });
  const named = { sessionObjectId: receipt.sessionObjectId, sessionId: receipt.sessionId, sessionType: receipt.sessionType, commitReceipt: cloneJson(receipt) };
  if (summary) {
    const state: SessionSummaryState = {
      ...named,
      channel: null,
      freeTime: null,
      orchestration: null,
      firstUserMessage: null,
      boxCount: 0,
      eventCount: 0,
      pendingTurn: false,
    };
    return { ...lifecycle, state, lastActivityAt: lifecycle.updatedAt, summary: true };
  }
  const state: SessionState = { ...named, transcript: [], events: [], transcriptText: '', commands: [], objects: [] };
  return { ...lifecycle, state, data: null, lastActivityAt: lifecycle.updatedAt };
}

const FALLBACK_MEDIA_TYPE = 'application/octet-stream';
const FALLBACK_FILE_NAME = 'uploaded-object';
const MAX_FILE_NAME_CHARS = 255;

/** A media type fit for a header: one token with a `/` and no spaces or controls, else `application/octet-stream`. */
export function sanitiseMediaType(mediaType: string): string {
  if (mediaType.trim() === '' || !mediaType.includes('/') || /[\p{Cc}\s]/u.test(mediaType)) return FALLBACK_MEDIA_TYPE;
  return mediaType;
}

/**
 * A file name fit for a `Content-Disposition` header: printable ASCII except `"`, `\`, `/` and `;`
 * (each other character becomes `_`), at most 255 characters, `uploaded-object` when empty.
 */
export function sanitiseFileName(fileName: string): string {
  let output = '';
  let count = 0;
  for (const character of fileName) {
    if (count === MAX_FILE_NAME_CHARS) break;
    const code = character.codePointAt(0) as number;
    const printable = code >= 0x21 && code <= 0x7e && !'"\\/;'.includes(character);
    output += printable ? character : '_';
    count++;
  }
  return output === '' ? FALLBACK_FILE_NAME : output;
}
