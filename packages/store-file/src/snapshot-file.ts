import { CorruptionError, type JsonValue, type Snapshot, type StreamId } from '@sessionfold/core/kernel';
import { writeFileAtomic } from '@sessionfold/atomic-write';
import { atomicWriteFs, errorCode, unreadable, type FileSystem } from './fs-layer.js';
import { decodeLine, frameLine, isPositiveInt } from './journal-codec.js';

/** Names the kind of file, so a snapshot is never mistaken for some other JSON. */
export const SNAPSHOT_FORMAT = 'sessionfold.stream-snapshot';
/** Bumped when the envelope's fields change; a reader refuses versions it does not know. */
export const SNAPSHOT_FORMAT_VERSION = 1;

/** A snapshot as stored, with the position and time of the `$snapshot` change it recorded. */
export interface StoredSnapshot {
  snapshot: Snapshot;
  position: number;
  recordedAt: string;
}

const ENVELOPE_KEYS = ['format', 'formatVersion', 'identity', 'revision', 'position', 'recordedAt', 'state'];
const IDENTITY_KEYS = ['stream', 'schemaVersion'];

/** A snapshot to write: the state is serialized once, when the caller hands it over, so later changes to the caller's object cannot leak in. */
export interface SnapshotToWrite {
  revision: number;
  identity: { stream: StreamId; schemaVersion: number };
  stateJson: string;
  position: number;
  recordedAt: string;
}

/**
 * The file's bytes: one framed line (`<sha256> <envelope JSON>\n`), so a flipped byte anywhere is caught
 * by the same checksum the journals use.
 */
export function encodeSnapshot(snapshot: SnapshotToWrite): string {
  const head = JSON.stringify({
    format: SNAPSHOT_FORMAT,
    formatVersion: SNAPSHOT_FORMAT_VERSION,
    identity: { stream: snapshot.identity.stream, schemaVersion: snapshot.identity.schemaVersion },
    revision: snapshot.revision,
    position: snapshot.position,
    recordedAt: snapshot.recordedAt,
  });
  return frameLine(`${head.slice(0, -1)},"state":${snapshot.stateJson}}`);
}

/** Replaces the snapshot file atomically (temp sibling, fsync, rename, fsync directory). */
export async function writeSnapshotFile(fsl: FileSystem, path: string, snapshot: SnapshotToWrite): Promise<void> {
  await writeFileAtomic(path, encodeSnapshot(snapshot), { mode: 0o600, fs: atomicWriteFs(fsl) });
}

/**
 * Reads and strictly validates the snapshot of `stream`: framing, checksum, envelope fields and identity,
 * all before the state is handed out. Undefined when there is no snapshot file.
 */
export async function readSnapshotFile(fsl: FileSystem, path: string, stream: StreamId): Promise<StoredSnapshot | undefined> {
  let bytes: Buffer;
  try {
    bytes = await fsl.readFile(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    // A directory in its place, EIO: named, and typed like every other failure to read the store.
    throw unreadable(path, error);
  }
  return decodeSnapshot(bytes, path, stream);
}

/** Strictly validates the bytes of `stream`'s snapshot file (`path` names it in errors). */
export function decodeSnapshot(bytes: Buffer, path: string, stream: StreamId): StoredSnapshot {
  const fail = (reason: string): never => {
    throw new CorruptionError(path, 1, reason);
  };
  if (bytes.length === 0 || bytes[bytes.length - 1] !== 0x0a || bytes.indexOf(0x0a) !== bytes.length - 1) {
    fail('a snapshot file is exactly one line ending in a newline');
  }
  const decoded = decodeLine(bytes, 0, bytes.length - 1);
  if ('reason' in decoded) return fail(decoded.reason);
  const v = decoded.value as Record<string, unknown>;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return fail('envelope is not an object');
  if (!sameKeys(v, ENVELOPE_KEYS)) return fail(`envelope fields are ${JSON.stringify(Object.keys(v))}, expected ${JSON.stringify(ENVELOPE_KEYS)}`);
  if (v.format !== SNAPSHOT_FORMAT) fail(`format is ${JSON.stringify(v.format)}, not ${JSON.stringify(SNAPSHOT_FORMAT)}`);
  if (v.formatVersion !== SNAPSHOT_FORMAT_VERSION) fail(`format version ${JSON.stringify(v.formatVersion)} is not supported`);
  const identity = v.identity as Record<string, unknown>;
  if (typeof identity !== 'object' || identity === null || !sameKeys(identity, IDENTITY_KEYS)) fail('identity is not { stream, schemaVersion }');
  // The identity is checked before anything else of the state is trusted.
  if (identity.stream !== stream) fail(`identity names stream ${JSON.stringify(identity.stream)}, not ${JSON.stringify(stream)}`);
  if (typeof identity.schemaVersion !== 'number' || !Number.isSafeInteger(identity.schemaVersion) || identity.schemaVersion < 0) {
    fail('identity.schemaVersion is not an integer ≥ 0');
  }
  if (!isPositiveInt(v.revision)) fail('revision is not an integer ≥ 1');
  if (!isPositiveInt(v.position)) fail('position is not an integer ≥ 1');
  if (typeof v.recordedAt !== 'string') fail('recordedAt is not a string');
  return {
    snapshot: {
      revision: v.revision as number,
      state: v.state as JsonValue,
      identity: { stream, schemaVersion: identity.schemaVersion as number },
    },
    position: v.position as number,
    recordedAt: v.recordedAt as string,
  };
}

function sameKeys(value: object, keys: readonly string[]): boolean {
  const actual = Object.keys(value);
  return actual.length === keys.length && keys.every((key) => Object.hasOwn(value, key));
}
