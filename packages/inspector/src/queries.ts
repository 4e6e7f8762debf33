import {
  replaySession,
  SessionHistoryError,
  type EventStore,
  type JsonValue,
  type LogEntry,
  type SessionCommand,
  type SessionRecord,
  type StagedObject,
} from '@sessionfold/core';
import { isUuid, sessionStream } from '@sessionfold/core/session';
import { jsonDiff, type DiffEntry } from './diff.js';

/** One retained event of a session's timeline, as the API and the page show it. */
export interface TimelineEvent {
  revision: number;
  position: number;
  recordedAt: string;
  type: string;
  data: JsonValue;
}

/** A page of a session's timeline: the retained events after revision `after`, oldest first. */
export interface TimelinePage {
  stream: string;
  /** The stream's revision when the page was read. */
  revision: number;
  /** The revision the stream's snapshot covers: the events up to it were dropped by compaction (0: none). */
  compactedAt: number;
  events: TimelineEvent[];
  /** Ask for `after=<nextAfter>` for the next page; null when this page reaches the end. */
  nextAfter: number | null;
}

/** The folded record at one retained revision, and what changed since the revision before it. */
export interface StateAtRevision {
  revision: number;
  record: SessionRecord | null;
  /** The revision the diff starts from (null: the record is the first retained state, diffed from nothing). */
  previousRevision: number | null;
  diff: DiffEntry[];
}

/** What a session's own stream holds beyond its record: the commands and the staged objects. */
export interface SessionParts {
  commands: SessionCommand[];
  objects: (StagedObject & { boxId: number; at: string })[];
}

/** The events of session `id` after revision `after`, at most `limit`: read from there, so the first page is cheap at any length. */
export async function timelinePage(store: EventStore, id: string, after: number, limit: number): Promise<TimelinePage> {
  const stream = sessionStream(checkedId(id));
  const read = await store.read(stream, { fromRevision: after + 1 });
  const events: TimelineEvent[] = [];
  let more = false;
  for await (const event of read.events) {
    if (event.revision <= after) continue;
    if (events.length === limit) {
      more = true;
      break;
    }
    events.push({ revision: event.revision, position: event.position, recordedAt: event.recordedAt, type: event.type, data: event.data });
  }
  const last = events.at(-1)?.revision;
  return { stream, revision: read.revision, compactedAt: read.snapshot?.revision ?? 0, events, nextAfter: more && last !== undefined ? last : null };
}

/** The record of session `id` at `revision`, folded from the stream's snapshot, with its diff from the revision before. */
export async function stateAtRevision(store: EventStore, id: string, revision: number): Promise<StateAtRevision> {
  const record = (await replaySession(store, checkedId(id), { toRevision: revision })) ?? null;
  let previous: SessionRecord | null = null;
  let previousRevision: number | null = null;
  if (revision > 1) {
    // The revision before may be compacted away: the first retained state is then diffed from nothing.
    previous = await replaySession(store, id, { toRevision: revision - 1 }).then(
      (found) => found ?? null,
      (error: unknown) => {
        if (error instanceof SessionHistoryError && error.code === 'invalid_request') return null;
        throw error;
      },
    );
    if (previous !== null) previousRevision = revision - 1;
  }
  return { revision, record, previousRevision, diff: jsonDiff(previous, record) };
}

/**
 * The commands and staged objects of the session `record` (as `get` returned it), taken from the record itself:
 * its view already holds the commands, and its log the objects with their box and time. Nothing is read from the
 * store, so a session's page costs no second fold of its stream, however long the stream is.
 */
export function sessionParts(record: SessionRecord): SessionParts {
  const objects: SessionParts['objects'] = [];
  const entries: readonly LogEntry[] = Array.isArray(record.state.events) ? record.state.events : [];
  for (const entry of entries) if (entry.object) objects.push({ ...entry.object, boxId: entry.boxId, at: entry.at });
  return { commands: Array.isArray(record.state.commands) ? record.state.commands : [], objects };
}

function checkedId(id: string): string {
  if (!isUuid(id)) throw SessionHistoryError.notFound();
  return id;
}
