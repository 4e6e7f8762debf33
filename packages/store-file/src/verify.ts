import { join } from 'node:path';
import { CorruptionError, isReservedName, type VerifyCode, type VerifyProblem, type VerifyReport, type VerifySeverity } from '@sessionfold/core/kernel';
import { listBlanks, readBlank } from './blank-journals.js';
import { decodeCheckpoint, readStoreId } from './checkpoint-slot.js';
import { errorCode, listDir, type FileSystem } from './fs-layer.js';
import { sha256Hex } from './journal-codec.js';
import { scanJournal } from './journal-scan.js';
import { Layout } from './layout.js';
import { PositionSet } from './position-set.js';
import { readRecordLog, type LogRecord } from './record-log.js';
import { readSnapshotFile, type StoredSnapshot } from './snapshot-file.js';
import { readStoreFormat } from './store-format.js';
import { Tombstones } from './tombstones.js';

const SHA256_NAME = /^[0-9a-f]{64}$/;
/** Times a stream is read again when a writer replaced its snapshot while it was being checked. */
const RETRIES = 5;

/**
 * The positions a journal scan claims, kept instead of checked, so a stream read again (its files replaced by a
 * running writer) does not count its own positions twice; they join the store-wide set once its read is final.
 */
class ClaimsOfOneJournal extends PositionSet {
  readonly positions: number[] = [];
  readonly lines: number[] = [];
  override claim(position: number, _path: string, line: number | undefined): void {
    this.positions.push(position);
    this.lines.push(line ?? 0);
  }
}

/**
 * Reads every file of the store and checks it, writing nothing: the format and store id files, the tombstones,
 * every owners log and blob (hash, owner), every snapshot (framing, checksum, envelope, identity) and journal
 * line (checksum, JSON, stream name, gap-free revisions, rising positions), each position once across the
 * store, and every checkpoint. Each damaged file is reported (with its first damaged line) and the check goes
 * on. Works beside a running writer: a stream whose snapshot the writer replaced meanwhile is read again.
 */
export async function verifyDirectory(
  fsl: FileSystem,
  layout: Layout,
  signal: AbortSignal | undefined,
  known: KnownJournals = NOTHING_KNOWN,
): Promise<VerifyReport> {
  signal?.throwIfAborted();
  const problems: VerifyProblem[] = [];
  const add = (severity: VerifySeverity, code: VerifyCode, file: string, line: number | undefined, message: string) => {
    problems.push({ severity, code, message, file, ...(line === undefined ? {} : { line }) });
  };
  /** Runs one file's check; damage and unreadable files become problems, anything else is thrown. */
  const checking = async <T>(file: string, code: VerifyCode, work: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await work();
    } catch (error) {
      if (signal?.aborted && error === signal.reason) throw error;
      if (error instanceof CorruptionError) add('error', code === 'damaged_record' ? classify(error) : code, error.file, error.line, error.message);
      else if (errorCode(error) !== undefined || (error as { cause?: unknown }).cause !== undefined) {
        add('error', 'unreadable', file, undefined, `${file} could not be read: ${(error as Error).message}`);
      } else throw error;
      return undefined;
    }
  };
  const checked = { streams: 0, records: 0, snapshots: 0, blobs: 0 };
  const positions = new PositionSet();
  const claim = (position: number, file: string, line: number | undefined) => {
    try {
      positions.claim(position, file, line);
    } catch (error) {
      if (!(error instanceof CorruptionError)) throw error;
      add('error', 'duplicate_position', file, line, error.message);
    }
  };

  await checking(layout.format, 'damaged_record', () => readStoreFormat(fsl, layout.format));
  await checking(layout.storeId, 'damaged_record', () => readStoreId(fsl, layout));

  const logOf = (path: string) =>
    checking(path, 'damaged_record', async () => {
      const read = await readRecordLog(fsl, path, false);
      if (read) await tornTail(fsl, path, read.log.length, read.records.length + 1, add);
      return read;
    });
  if (await logOf(layout.tombstones)) {
    const tombstones = await checking(layout.tombstones, 'damaged_record', () => Tombstones.load(fsl, layout.tombstones, false));
    for (const mark of tombstones?.marks.values() ?? []) claim(mark.position, layout.tombstones, undefined);
  }

  // Blobs: each file against its name, each owner record against the files, each file against the owners.
  const blobNames = new Set((await listDir(fsl, layout.blobs)).filter((name) => SHA256_NAME.test(name)));
  const owned = new Set<string>();
  for (const name of await listDir(fsl, layout.owners)) {
    if (Layout.parseOwnersFile(name) === undefined) continue;
    const path = join(layout.owners, name);
    const records: LogRecord[] = (await logOf(path))?.records ?? [];
    for (const record of records) {
      const sha = (record.value as { sha256?: unknown } | null)?.sha256;
      if (typeof sha !== 'string' || !SHA256_NAME.test(sha)) {
        add('error', 'damaged_record', path, record.line, `${path}:${record.line}: not a blob owner record`);
        break;
      }
      owned.add(sha);
      if (!blobNames.has(sha))
        add('error', 'blob_missing', path, record.line, `${path}:${record.line}: blob ${sha} is owned here but ${layout.blob(sha)} is absent`);
    }
  }
  for (const sha of [...blobNames].sort()) {
    signal?.throwIfAborted();
    const path = layout.blob(sha);
    const bytes = await checking(path, 'blob_hash', () => fsl.readFile(path));
    if (bytes === undefined) continue;
    checked.blobs++;
    if (sha256Hex(bytes) !== sha) add('error', 'blob_hash', path, undefined, `${path}: the bytes do not match their sha256`);
    if (!owned.has(sha)) add('warning', 'blob_orphan', path, undefined, `${path} is owned by no stream (kept; remove it by hand if nothing needs it)`);
  }

  const streams = new Map<string, { journal: boolean; snapshot: boolean }>();
  for (const name of await listDir(fsl, layout.streams)) {
    const parsed = Layout.parseStreamFile(name);
    if (!parsed) continue;
    const files = streams.get(parsed.stream) ?? { journal: false, snapshot: false };
    files[parsed.kind] = true;
    streams.set(parsed.stream, files);
  }
  for (const stream of [...streams.keys()].sort()) {
    signal?.throwIfAborted();
    const [snapshotPath, journalPath] = [layout.snapshot(stream), layout.journal(stream)];
    if (isReservedName(stream)) {
      const file = streams.get(stream)?.journal ? journalPath : snapshotPath;
      add('warning', 'reserved_name', file, undefined, reservedWarning(file, `stream ${stream}`));
    }
    for (let attempt = 0; ; attempt++) {
      const mark = problems.length;
      // Taken before the scan: appends meanwhile only make the file longer than this.
      const knownHere = known.of(stream);
      const first = await checking(snapshotPath, 'damaged_snapshot', () => readSnapshotFile(fsl, snapshotPath, stream));
      const snapshotDamaged = problems.length > mark;
      const claims = new ClaimsOfOneJournal();
      // With the snapshot unreadable, where the journal must start is unknown: any start is let through.
      const from = snapshotDamaged ? Number.MAX_SAFE_INTEGER - 1 : (first?.snapshot.revision ?? 0);
      const journal = await checking(journalPath, 'damaged_record', () => scanJournal(fsl, journalPath, stream, from, false, claims, signal));
      // Only compared with the first read: damage in it was reported by the first.
      const second = await readSnapshotFile(fsl, snapshotPath, stream).catch(() => undefined);
      if (attempt < RETRIES && !snapshotDamaged && !sameSnapshot(first, second)) {
        // The writer compacted the stream meanwhile: what was read may mix two versions; read it again.
        problems.length = mark;
        continue;
      }
      if (journal === undefined && first === undefined && !snapshotDamaged && problems.length === mark) break;
      checked.streams++;
      if (first) {
        checked.snapshots++;
        claim(first.position, snapshotPath, 1);
      }
      // Bytes the store knows were acknowledged are missing: no write cut short explains that.
      const size = journal ? journal.length + journal.tornBytes : 0;
      const short = journal !== undefined && knownHere !== undefined && knownHere.ino === journal.ino && size < knownHere.length;
      if (short) add('error', 'damaged_record', journalPath, journal.lines + 1, shortOfKnown(journalPath, journal.lines + 1, size, knownHere.length));
      if (journal) {
        checked.records += journal.lines;
        claims.positions.forEach((position, index) => claim(position, journalPath, claims.lines[index]));
        if (journal.tornBytes > 0 && !short) tornWarning(add, journalPath, journal.lines + 1, journal.tornBytes);
      }
      break;
    }
  }

  for (const stream of known.streams()) {
    const length = known.of(stream)?.length ?? 0;
    if (streams.get(stream)?.journal || length === 0) continue;
    const path = layout.journal(stream);
    // Gone since the listing because the writer deleted or compacted the stream is no damage.
    if (known.of(stream) === undefined || (await fsl.lstat(path).catch(() => undefined)) !== undefined) continue;
    checked.streams++;
    add('error', 'damaged_record', path, 1, `${path}:1: the journal is missing, while the store knows it holds ${length} bytes of the stream's events`);
  }

  for (const { path } of await listBlanks(fsl, layout)) {
    const held = await checking(path, 'unreadable', () => readBlank(fsl, path));
    if (held === undefined || held === 'empty') continue;
    add(
      'warning',
      'index_mismatch',
      path,
      1,
      'stream' in held
        ? `${path} holds the journal of ${held.stream}, whose name a crash lost; a writer opening the store puts it back`
        : `${path} holds bytes that are not a journal (${held.reason}); kept for inspection, nothing reads it`,
    );
  }

  for (const name of await listDir(fsl, layout.checkpoints)) {
    signal?.throwIfAborted();
    if (Layout.isTemporary(name)) continue;
    const path = join(layout.checkpoints, name);
    await checking(path, 'damaged_record', async () => decodeCheckpoint(await fsl.readFile(path), path));
    if (isReservedName(name)) add('warning', 'reserved_name', path, undefined, reservedWarning(path, `checkpoint ${name}`));
  }
  signal?.throwIfAborted();
  return { ok: !problems.some((p) => p.severity === 'error'), problems, checked };
}

/** A name stored before such names were refused: it still reads, but Windows cannot hold the file. */
function reservedWarning(file: string, what: string): string {
  return `${file}: ${what} has a name Windows reserves; it still reads, deletes and exports, but no store creates such a name any more and the directory cannot be copied to Windows (copy it to another name)`;
}

/**
 * The kind of damage a scan reported. The scan's reasons are this package's own wording (journal-scan.ts),
 * matched here so the report can say which rule a line broke without the scan knowing about reports.
 */
function classify(error: CorruptionError): VerifyCode {
  if (/is also used elsewhere/.test(error.message)) return 'duplicate_position';
  if (/revision \d+ follows revision|first revision is/.test(error.message)) return 'revision_gap';
  if (/position \d+ does not follow/.test(error.message)) return 'position_order';
  return 'damaged_record';
}

function sameSnapshot(a: StoredSnapshot | undefined, b: StoredSnapshot | undefined): boolean {
  return (a?.position ?? 0) === (b?.position ?? 0);
}

type Add = (severity: VerifySeverity, code: VerifyCode, file: string, line: number | undefined, message: string) => void;

/** What the store object knows of the journals (length and inode), to check the files against (`verify`). */
export interface KnownJournals {
  /** The journal of `stream` as known now; undefined when the store knows none. */
  of(stream: string): { length: number; ino: number } | undefined;
  /** The streams it may know a journal of. */
  streams(): Iterable<string>;
}

const NOTHING_KNOWN: KnownJournals = { of: () => undefined, streams: () => [] };

function shortOfKnown(path: string, line: number, size: number, known: number): string {
  return `${path}:${line}: the journal holds ${size} bytes, short of the ${known} bytes the store knows it holds: it was cut or changed under the store`;
}

async function tornTail(fsl: FileSystem, path: string, length: number, line: number, add: Add): Promise<void> {
  const size = (await fsl.lstat(path)).size;
  if (size > length) tornWarning(add, path, line, size - length);
}

function tornWarning(add: Add, path: string, line: number, bytes: number): void {
  add(
    'warning',
    'torn_tail',
    path,
    line,
    `${path}:${line}: ${bytes} bytes after the last complete record (a write cut short, never acknowledged; the next writer cuts them off)`,
  );
}
