import { createHash } from 'node:crypto';
import type { SessionCommand, SessionHistory, SessionRecord, SessionSummary } from '@sessionfold/core';

/** A staged object, by its session and `pending:N` id. */
export interface ObjectRef {
  session: string;
  pendingId: string;
}

/** Everything an application reads from the service, to compare one backend with another. */
export interface Records {
  /** `list()`: every live session and completion receipt, in the service's order. */
  list: SessionSummary[];
  /** `get()` of every listed id, in the same order. */
  sessions: SessionRecord[];
  commandHeads: SessionCommand[];
  /** The staged objects asked for: name, media type and the sha256 of their bytes. */
  objects: { ref: ObjectRef; fileName: string; mediaType: string; sha256: string }[];
}

/** Reads the records of `history`: the list, each listed session in full, the command heads and the objects in `objects`. */
export async function readRecords(history: SessionHistory, objects: readonly ObjectRef[]): Promise<Records> {
  const list = await history.list();
  const sessions: SessionRecord[] = [];
  for (const summary of list) sessions.push(await history.get(summary.id));
  const staged: Records['objects'] = [];
  for (const ref of objects) {
    const object = await history.object(ref.session, ref.pendingId);
    staged.push({ ref, fileName: object.fileName, mediaType: object.mediaType, sha256: createHash('sha256').update(object.bytes).digest('hex') });
  }
  return { list, sessions, commandHeads: await history.commandHeads(), objects: staged };
}
