import { readFile } from 'node:fs/promises';
import { AtomicWriteIoError, errorCode, writeFileAtomic, type AtomicWriteFs } from '@sessionfold/atomic-write';
import { SCHEMA_VERSION, validatePayload, type SessionSnapshot } from './envelope.js';
import { SessionFileInvalidError, SessionFileIoError } from './errors.js';
import type { JsonValue } from './json-value.js';
import { pythonJsonDumps } from './python-json.js';
import type { SessionIdentity } from './records.js';

/** A run that has said nothing yet: no turns, no transcript, an empty loop, no compactions. */
export function newSnapshot(identity: SessionIdentity): SessionSnapshot {
  return { identity, turns: [], transcript: [], loop: {}, compactions: 0 };
}

export interface SaveSnapshotOptions {
  /** File-system layer for the atomic write; injectable for fault tests. */
  fs?: AtomicWriteFs;
}

/**
 * Validates `snapshot` and atomically replaces `path` with it as schema version 2, in Python's
 * `json.dumps(indent=2)` bytes, whatever `version` key the argument carries. A snapshot `loadSnapshot` would
 * refuse is never written. A failed file-system call is `SessionFileIoError`; a directory at `path` and a
 * directory sync that failed after the rename are the writer's `DestinationIsDirectoryError` and
 * `AtomicWriteDirectorySyncError`.
 */
export async function saveSnapshot(path: string, snapshot: SessionSnapshot, options: SaveSnapshotOptions = {}): Promise<void> {
  // Something that is not an object cannot be taken apart below: validation refuses it as it is, naming the path.
  if (typeof snapshot !== 'object' || snapshot === null) validatePayload(snapshot, path);
  // A `version` key (a loaded file spread back with its own) is dropped: the writer always writes the current one.
  const {
    version: _version,
    identity,
    turns,
    transcript,
    loop,
    compactions,
    ...rest
  } = snapshot as SessionSnapshot & {
    version?: unknown;
  };
  // The envelope is built by hand so its key order is fixed; anything extra is kept so validation refuses it.
  const payload = { version: SCHEMA_VERSION, identity, turns, transcript, loop, compactions, ...rest };
  validatePayload(payload, path);
  const bytes = pythonJsonDumps(payload as unknown as JsonValue);
  try {
    await writeFileAtomic(path, bytes, options.fs ? { fs: options.fs } : {});
  } catch (error) {
    // The session file's contract: an I/O failure is its own error, naming the path and the step.
    if (error instanceof AtomicWriteIoError) throw new SessionFileIoError(error.path, error.operation, { cause: error.cause });
    throw error;
  }
}

/**
 * Reads and validates the session file at `path`: `undefined` when nothing is there (nothing is created),
 * the snapshot when it is a valid version 1 or 2 file, `SessionFileInvalidError` or `SessionFileIoError` otherwise.
 */
export async function loadSnapshot(path: string): Promise<SessionSnapshot | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (cause) {
    if (errorCode(cause) === 'ENOENT') return undefined;
    throw new SessionFileIoError(path, 'read', { cause });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    throw new SessionFileInvalidError(path, `is not valid JSON (${detail}).`, { cause });
  }
  const { version: _version, ...snapshot } = validatePayload(parsed, path);
  return snapshot;
}
