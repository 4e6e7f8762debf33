import { CorruptionError, DELETED_RECORD, SNAPSHOT_RECORD, UnsupportedFormatError, type JsonValue } from '@sessionfold/core/kernel';
import { STREAM_ID_PATTERN } from '@sessionfold/core/store-kit';
import { join } from 'node:path';
import { errorCode, listDir, readingFile, type FileSystem } from '../fs-layer.js';
import { asEventLine, decodeLine, eventPayload, frameLine, isLineMissingItsNewline, isPositiveInt, misplaced, type EventLine } from '../journal-codec.js';
import { LAST_LEGACY_FORMAT_VERSION, readStoreFormat } from '../store-format.js';

/** One framed line of a checksummed file, with its 1-based number. */
interface FileLine {
  value: unknown;
  no: number;
}

/** A change that takes a position, already as its format-4 payload. */
interface Change {
  position: number;
  payload: string;
}

/** What one stream's files hold once read. */
interface StreamContent {
  snapshot?: { revision: number; position: number; recordedAt: string; dataJson: string };
  events: EventLine[];
  /** The stream has a journal or a snapshot file (even an empty journal). */
  hasFiles: boolean;
}

const SHA256_NAME = /^[0-9a-f]{64}$/;
const BLANK_NAME = /^blank-[0-9a-f]{16}$/;
const SNAPSHOT_KEYS = ['format', 'formatVersion', 'identity', 'revision', 'position', 'recordedAt', 'state'];

/**
 * Reads a store of format 1–3 (one journal per stream) and returns all it holds as format-4 log lines, framed and
 * sorted by position, the blob-owner lines last: what the old store's writer would read, torn tails left out.
 * Damage anywhere else is `CorruptionError`; nothing in the directory is changed.
 */
export async function legacyLogLines(fsl: FileSystem, directory: string): Promise<{ formatVersion: 1 | 2 | 3; lines: string[] }> {
  const formatPath = join(directory, 'format.json');
  const formatVersion = await readStoreFormat(fsl, formatPath);
  if (formatVersion > LAST_LEGACY_FORMAT_VERSION) throw new UnsupportedFormatError(formatPath, formatVersion, LAST_LEGACY_FORMAT_VERSION);
  const streamsDir = join(directory, 'streams');
  const positions = new Map<number, string>();
  const claim = (position: number, path: string, line: number | undefined) => {
    if (positions.has(position)) {
      throw new CorruptionError(path, line, `position ${position} is also used elsewhere in the store: a line or journal was copied or moved`);
    }
    positions.set(position, path);
  };

  const tombstonesPath = join(directory, 'tombstones.jsonl');
  const tombstones = new Map<string, { revision: number; position: number; recordedAt: string }>();
  for (const { value, no } of (await readRecords(fsl, tombstonesPath)) ?? []) {
    const { stream, revision, position, recordedAt } = (value ?? {}) as Record<string, unknown>;
    if (
      typeof stream !== 'string' ||
      !STREAM_ID_PATTERN.test(stream) ||
      !isPositiveInt(revision) ||
      !isPositiveInt(position) ||
      typeof recordedAt !== 'string'
    ) {
      throw new CorruptionError(tombstonesPath, no, 'not a tombstone record');
    }
    // A later line of the same stream is a later deletion: only the latest is kept, as the old store did.
    tombstones.set(stream, { revision, position, recordedAt });
  }
  for (const mark of tombstones.values()) claim(mark.position, tombstonesPath, undefined);

  // Journals and snapshots by stream; a name that is no stream file (a temporary, a stray) is not the store's.
  const journals = new Map<string, string>();
  const snapshots = new Map<string, string>();
  for (const name of await listDir(fsl, streamsDir)) {
    const [stream, into] = name.endsWith('.snapshot.json') ? [name.slice(0, -14), snapshots] : name.endsWith('.jsonl') ? [name.slice(0, -6), journals] : [];
    if (stream !== undefined && into && STREAM_ID_PATTERN.test(stream)) into.set(stream, join(streamsDir, name));
  }
  // A machine crash may lose the rename of a blank into streams/: its records are that stream's journal.
  for (const dir of [join(directory, 'blanks'), join(directory, 'blanks', 'alternate')]) {
    for (const name of (await listDir(fsl, dir)).filter((entry) => BLANK_NAME.test(entry))) {
      const stream = await streamOfBlank(fsl, join(dir, name));
      if (stream !== undefined && !journals.has(stream)) journals.set(stream, join(dir, name));
    }
  }

  const contents = new Map<string, StreamContent>();
  for (const stream of new Set([...journals.keys(), ...snapshots.keys()])) {
    const snapshotPath = snapshots.get(stream);
    const snapshot = snapshotPath === undefined ? undefined : await readSnapshot(fsl, snapshotPath, stream);
    if (snapshot && snapshotPath) claim(snapshot.position, snapshotPath, 1);
    const journalPath = journals.get(stream);
    const records = journalPath === undefined ? undefined : await readRecords(fsl, journalPath);
    const events = records && journalPath ? journalEvents(records, journalPath, stream, snapshot?.revision ?? 0, claim) : [];
    contents.set(stream, { snapshot, events, hasFiles: snapshot !== undefined || records !== undefined });
  }

  const changes: Change[] = [];
  const gone = new Set<string>();
  for (const [stream, content] of contents) {
    const mark = tombstones.get(stream);
    const { snapshot } = content;
    // Positions rise along a journal: its last committed line holds its largest.
    const maxPosition = Math.max(snapshot?.position ?? 0, content.events.at(-1)?.position ?? 0);
    // A deletion recorded after everything the files hold was cut short before they were all removed.
    if (mark && content.hasFiles && mark.position > maxPosition) gone.add(stream);
    // Records from before the deletion belong to the incarnation it ended.
    const live = (position: number) => !mark || position > mark.position;
    if (snapshot && live(snapshot.position)) {
      changes.push({
        position: snapshot.position,
        payload: eventPayload(stream, snapshot.revision, snapshot.position, snapshot.recordedAt, SNAPSHOT_RECORD, undefined, false, snapshot.dataJson),
      });
    }
    const covered = snapshot && live(snapshot.position) ? snapshot.revision : 0;
    for (const event of content.events) {
      if (event.revision <= covered || !live(event.position)) continue;
      const { revision, position, recordedAt, type, eventId, more, data, schemaVersion } = event;
      changes.push({
        position,
        payload: eventPayload(stream, revision, position, recordedAt, type, eventId, more === true, JSON.stringify(data), schemaVersion),
      });
    }
  }
  for (const [stream, mark] of tombstones) {
    changes.push({
      position: mark.position,
      payload: eventPayload(stream, mark.revision, mark.position, mark.recordedAt, DELETED_RECORD, undefined, false, 'null'),
    });
  }
  changes.sort((a, b) => a.position - b.position);
  const lines = changes.map((change) => frameLine(change.payload));
  lines.push(...(await ownerLines(fsl, directory, gone)));
  return { formatVersion: formatVersion as 1 | 2 | 3, lines };
}

/**
 * The committed events of one journal, checked as the old store checked them: every complete line, that it names
 * `stream` (release 0.1.0's lines name none, and come first), revisions without gaps, rising positions. A batch
 * whose last line (the one without `more`) never made it is a torn tail, left out like bytes after the last newline.
 */
function journalEvents(
  records: FileLine[],
  path: string,
  stream: string,
  snapshotRevision: number,
  claim: (position: number, path: string, line: number) => void,
): EventLine[] {
  const events: EventLine[] = [];
  let batch: { event: EventLine; no: number }[] = [];
  let named = false;
  let prevRevision = 0;
  let prevPosition = 0;
  for (const { value, no } of records) {
    const event = asEventLine(value);
    if (typeof event === 'string') throw new CorruptionError(path, no, event);
    if (event.stream !== undefined) {
      if (event.stream !== stream) throw new CorruptionError(path, no, misplaced(event.stream));
      named = true;
    } else if (named) {
      throw new CorruptionError(path, no, 'the line does not name its stream, though the lines before it do');
    }
    if (prevRevision === 0) {
      if (snapshotRevision === 0 ? event.revision !== 1 : event.revision > snapshotRevision + 1) {
        const reason =
          snapshotRevision === 0
            ? `first revision is ${event.revision}, not 1, and there is no snapshot`
            : `first revision is ${event.revision}, past the snapshot's revision ${snapshotRevision} + 1`;
        throw new CorruptionError(path, no, reason);
      }
    } else if (event.revision !== prevRevision + 1) {
      throw new CorruptionError(path, no, `revision ${event.revision} follows revision ${prevRevision}`);
    }
    if (event.position <= prevPosition) throw new CorruptionError(path, no, `position ${event.position} does not follow position ${prevPosition}`);
    prevRevision = event.revision;
    prevPosition = event.position;
    batch.push({ event, no });
    if (event.more === true) continue;
    for (const line of batch) {
      claim(line.event.position, path, line.no);
      events.push(line.event);
    }
    batch = [];
  }
  return events;
}

/**
 * The checksummed lines of the file at `path` (undefined when it does not exist). A damaged complete line is
 * `CorruptionError`; bytes after the last newline are a torn write and left out, unless they are a whole line
 * that lost its newline (then it was damaged after it was written).
 */
async function readRecords(fsl: FileSystem, path: string): Promise<FileLine[] | undefined> {
  const bytes = await readIfPresent(fsl, path);
  if (bytes === undefined) return undefined;
  const records: FileLine[] = [];
  let start = 0;
  for (let nl = bytes.indexOf(0x0a); nl !== -1; start = nl + 1, nl = bytes.indexOf(0x0a, start)) {
    const decoded = decodeLine(bytes, start, nl);
    if ('reason' in decoded) throw new CorruptionError(path, records.length + 1, decoded.reason);
    records.push({ value: decoded.value, no: records.length + 1 });
  }
  if (isLineMissingItsNewline(bytes.subarray(start))) throw new CorruptionError(path, records.length + 1, 'a complete record lost its newline');
  return records;
}

async function readIfPresent(fsl: FileSystem, path: string): Promise<Buffer | undefined> {
  return readingFile(path, async () => {
    try {
      return await fsl.readFile(path);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
  });
}

/** The stream a blank's first line names, when it is a valid record naming a valid stream id. */
async function streamOfBlank(fsl: FileSystem, path: string): Promise<string | undefined> {
  const bytes = await readIfPresent(fsl, path);
  const nl = bytes?.indexOf(0x0a) ?? -1;
  if (!bytes || nl === -1) return undefined;
  const decoded = decodeLine(bytes, 0, nl);
  const stream = 'value' in decoded ? (decoded.value as { stream?: unknown } | null)?.stream : undefined;
  return typeof stream === 'string' && STREAM_ID_PATTERN.test(stream) ? stream : undefined;
}

/** A snapshot file, validated as strictly as the old store did, with its Snapshot as the `$snapshot` record's data. */
async function readSnapshot(fsl: FileSystem, path: string, stream: string): Promise<StreamContent['snapshot']> {
  const bytes = await readIfPresent(fsl, path);
  if (bytes === undefined) return undefined;
  const fail = (reason: string): never => {
    throw new CorruptionError(path, 1, reason);
  };
  if (bytes.length === 0 || bytes.indexOf(0x0a) !== bytes.length - 1) fail('a snapshot file is exactly one line ending in a newline');
  const decoded = decodeLine(bytes, 0, bytes.length - 1);
  if ('reason' in decoded) return fail(decoded.reason);
  const v = decoded.value as Record<string, unknown>;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return fail('envelope is not an object');
  if (!sameKeys(v, SNAPSHOT_KEYS)) fail(`envelope fields are ${JSON.stringify(Object.keys(v))}, expected ${JSON.stringify(SNAPSHOT_KEYS)}`);
  if (v.format !== 'sessionfold.stream-snapshot') fail(`format is ${JSON.stringify(v.format)}, not "sessionfold.stream-snapshot"`);
  if (v.formatVersion !== 1) fail(`format version ${JSON.stringify(v.formatVersion)} is not supported`);
  const identity = v.identity as Record<string, unknown> | null;
  if (typeof identity !== 'object' || identity === null || !sameKeys(identity, ['stream', 'schemaVersion']))
    return fail('identity is not { stream, schemaVersion }');
  if (identity.stream !== stream) fail(`identity names stream ${JSON.stringify(identity.stream)}, not ${JSON.stringify(stream)}`);
  const { schemaVersion } = identity;
  if (typeof schemaVersion !== 'number' || !Number.isSafeInteger(schemaVersion) || schemaVersion < 0) fail('identity.schemaVersion is not an integer ≥ 0');
  if (!isPositiveInt(v.revision)) return fail('revision is not an integer ≥ 1');
  if (!isPositiveInt(v.position)) return fail('position is not an integer ≥ 1');
  if (typeof v.recordedAt !== 'string') return fail('recordedAt is not a string');
  const data = { revision: v.revision, state: v.state as JsonValue, identity: { stream, schemaVersion } };
  return { revision: v.revision, position: v.position, recordedAt: v.recordedAt, dataJson: JSON.stringify(data) };
}

function sameKeys(value: object, keys: readonly string[]): boolean {
  const actual = Object.keys(value);
  return actual.length === keys.length && keys.every((key) => Object.hasOwn(value, key));
}

/**
 * `{"stream":S,"blob":sha}` lines for each blob a stream's owners log names whose file is in blobs/ (a record of an
 * absent blob is a put cut short), by stream then sha; none for streams in `gone`, whose deletion the old writer
 * would have finished by dropping them.
 */
async function ownerLines(fsl: FileSystem, directory: string, gone: ReadonlySet<string>): Promise<string[]> {
  const present = new Set((await listDir(fsl, join(directory, 'blobs'))).filter((name) => SHA256_NAME.test(name)));
  const owned: [string, string[]][] = [];
  for (const name of await listDir(fsl, join(directory, 'owners'))) {
    const stream = name.endsWith('.jsonl') ? name.slice(0, -6) : '';
    if (!STREAM_ID_PATTERN.test(stream)) continue;
    const path = join(directory, 'owners', name);
    const shas = new Set<string>();
    for (const { value, no } of (await readRecords(fsl, path)) ?? []) {
      const sha = (value as { sha256?: unknown } | null)?.sha256;
      if (typeof sha !== 'string' || !SHA256_NAME.test(sha)) throw new CorruptionError(path, no, 'not a blob owner record');
      if (present.has(sha)) shas.add(sha);
    }
    if (!gone.has(stream)) owned.push([stream, [...shas].sort()]);
  }
  owned.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return owned.flatMap(([stream, shas]) => shas.map((sha) => frameLine(`{"stream":${JSON.stringify(stream)},"blob":"${sha}"}`)));
}
