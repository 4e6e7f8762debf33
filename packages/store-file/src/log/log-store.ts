import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  CorruptionError,
  InvalidInputError,
  SessionfoldError,
  StorageError,
  StoreClosedError,
  type AppendResult,
  type CheckpointSlot,
  type CompleteEventStore,
  type ExpectedRevision,
  type FeedRecord,
  type FollowOptions,
  type NewEvent,
  type RecordedEvent,
  type Snapshot,
  type StoreObserver,
  type StoreStatus,
  type StoredEvent,
  type StoredStreamRead,
  type StreamId,
  type StreamRead,
  type VerifyOptions,
  type VerifyReport,
} from '@sessionfold/core/kernel';
import {
  DEFAULT_MAX_EVENT_BYTES,
  ChangeSignal,
  PagedEvents,
  eventFromRow,
  followFeed,
  readClock,
  storedEventFromRow,
  storeObserverOf,
  validateAppend,
  validateFollowOptions,
  validateNewStreamId,
  validateReadAllOptions,
  validateReadOptions,
  validateSha256,
  validateSnapshot,
  validateStreamId,
  validateStreamsOptions,
  validateWriteOptions,
  type EventRow,
  type ObserverCall,
} from '@sessionfold/core/store-kit';
import { createCheckpointSlot, ensureStoreId, readStoreId } from '../checkpoint-slot.js';
import { errorCode, listDir, realDirectory, unlinkIfPresent, withOverrides, type FileSystem } from '../fs-layer.js';
import { Layout } from '../layout.js';
import { acquireLock, lockHolder, type WriterLock } from '../lock.js';
import { STORE_FORMAT_VERSION, readStoreFormat, writeStoreFormat } from '../store-format.js';
import { sha256Hex } from '../journal-codec.js';
import { BlobFiles } from './blob-files.js';
import { LogWriter, MAX_FLUSH_CHARS, lineCharsBound, type LogWrite, type WriteOutcome } from './log-writer.js';
import { catchUp, createDirectory, createLogDirectory, readLog, refuseGaps, refuseLinkedDirectories } from './open-log.js';
import { cleanSegment, segmentsToClean } from './cleaner.js';
import { saveIndexSnapshot } from './index-snapshot.js';
import { feedPages, holdStream, readSnapshot, streamEvents, type ReadContext } from './reads.js';
import { Segment, listSegments } from './segments.js';
import { StreamIndex } from './stream-index.js';
import { verifyLog } from './verify-log.js';

/** How often a read-only view's follower looks for what the writer added. */
const VIEW_POLL_MS = 50;
/** A writer saves an index snapshot in the background after this many positions. */
const INDEX_EVERY_POSITIONS = 50_000;
/** The writer wakes its followers at every flush; the timer is only a safety net. */
const WRITER_POLL_MS = 1000;

/** Options of `fileStore`. */
export interface FileStoreOptions {
  /** The store's directory; created (0700) when missing unless `readOnly`. */
  directory: string;
  /**
   * Open without the writer lock, as a view that follows what the writer adds; writes are refused and no file is
   * modified (a torn tail is ignored, not cut).
   */
  readOnly?: boolean;
  /** Source of `recordedAt` (default: the system clock); one that throws or returns an invalid Date fails that write, which writes nothing. */
  clock?: () => Date;
  /** Largest serialized event in bytes (default 1 MiB). */
  maxEventBytes?: number;
  /** Replaces file-system calls, e.g. to inject a full disk or a failing fdatasync in tests. */
  fs?: Partial<FileSystem>;
  /** Told of durable appends and flushes, compactions and damage found, for an application's logger and metrics. */
  observer?: StoreObserver;
}

/** The file store as `fileStore` returns it: the whole port, every optional ability there. */
export interface FileEventStore extends CompleteEventStore {}

/**
 * Opens (creating if needed) a file store in `options.directory`: one checksummed JSONL log of every stream, in
 * segments, with blobs and checkpoints beside it. A writer takes the directory's lock, upgrades a directory of an
 * earlier layout, and cuts a torn tail; damage anywhere else is a `CorruptionError` naming segment and line.
 */
export async function fileStore(options: FileStoreOptions): Promise<FileEventStore> {
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('options', 'expected { directory }');
  if (typeof options.directory !== 'string' || options.directory.length === 0) {
    throw new InvalidInputError('directory', 'fileStore needs the path of a directory');
  }
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  if (!Number.isSafeInteger(maxEventBytes) || maxEventBytes < 1) throw new InvalidInputError('maxEventBytes', 'expected an integer ≥ 1');
  const readOnly = options.readOnly === true;
  const observe = storeObserverOf(options.observer);
  const fs = withOverrides(options.fs);
  const layout = new Layout(realDirectory(options.directory));
  const logDir = layout.log;
  let lock: WriterLock | undefined;
  if (!readOnly) {
    await createDirectory(fs, layout.directory);
    try {
      lock = await acquireLock(fs, layout.directory);
    } catch (cause) {
      if (cause instanceof SessionfoldError) throw cause;
      throw new StorageError(
        `@sessionfold/store-file: cannot write in ${layout.directory} (${errorCode(cause) ?? String(cause)}), so it cannot take the writer lock; ` +
          'check the permissions of the directory, or open it read-only.',
        { cause },
      );
    }
  } else {
    // A read-only view of a directory that is not there is almost always a wrong path: say so.
    try {
      await fs.lstat(layout.directory);
    } catch (cause) {
      throw new StorageError(`@sessionfold/store-file: cannot open ${layout.directory} read-only.`, { cause });
    }
  }
  try {
    await refuseLinkedDirectories(fs, [logDir, layout.index, layout.blobs, layout.checkpoints, layout.streams]);
    // Read before anything is created or repaired: a layout of a newer release is not this one's to touch.
    let format = await readStoreFormat(fs, layout.format);
    const fresh = format === 1 && (await isAbsent(fs, layout.streams)) && (await isAbsent(fs, logDir));
    let legacy: Segment | undefined;
    if (fresh) {
      format = STORE_FORMAT_VERSION;
      if (!readOnly) {
        await createLogDirectory(fs, layout.directory);
        await writeStoreFormat(fs, layout.format, STORE_FORMAT_VERSION);
      }
    } else if (format < STORE_FORMAT_VERSION) {
      if (readOnly) {
        const { legacyLogLines } = await import('../legacy/legacy-log.js');
        const { lines } = await legacyLogLines(fs, layout.directory);
        legacy = new Segment(1, join(logDir, '00000000000000000001.jsonl'), Buffer.from(lines.join('')));
      } else {
        const { upgradeLegacyStore } = await import('../legacy/upgrade.js');
        await upgradeLegacyStore(fs, layout.directory);
      }
    } else if (!readOnly) {
      const { removeLegacyLeftovers } = await import('../legacy/upgrade.js');
      await removeLegacyLeftovers(fs, layout.directory);
      for (const dir of [logDir, layout.index, layout.blobs]) await removeTemporaries(fs, dir);
    }
    const opened = legacy !== undefined ? { segments: [legacy], index: new StreamIndex() } : await readLog(fs, logDir, layout.index, !readOnly);
    if (legacy !== undefined) {
      await catchUp(fs, opened.index, legacy, true, false);
      refuseGaps(opened.index);
    }
    const storeId = readOnly ? await readStoreId(fs, layout) : await ensureStoreId(fs, layout);
    const store = new LogStore({
      fs,
      layout,
      logDir,
      readOnly,
      follows: legacy === undefined,
      clock: options.clock ?? (() => new Date()),
      maxEventBytes,
      lock,
      storeId,
      observe: options.observer === undefined ? undefined : observe,
      segments: opened.segments,
      index: opened.index,
    });
    if (!readOnly) {
      try {
        await store.disownMissingBlobs();
      } catch (error) {
        await store.close();
        throw error;
      }
    }
    return store;
  } catch (error) {
    await lock?.release().catch(() => undefined);
    if (error instanceof CorruptionError) observe('corruptionFound', { error });
    if (error instanceof SessionfoldError) throw error;
    throw new StorageError(`@sessionfold/store-file: could not open ${layout.directory}.`, { cause: error });
  }
}

/** Failures of a read that may pass when tried again: too many open files, a busy or interrupted call. */
const PASSING_CODES = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EINTR', 'ETIMEDOUT']);

/** Whether a follower's failed read may pass (see `PASSING_CODES`): it then tries again instead of ending. */
function passingFailure(error: unknown): error is StorageError {
  if (!(error instanceof StorageError) || error.poisoned) return false;
  for (let at: unknown = error.cause, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++) {
    if (PASSING_CODES.has(errorCode(at) ?? '')) return true;
  }
  return false;
}

/** Removes what a cleaning, an index snapshot or a blob write cut short left in `dir` (hidden `.….tmp` files). */
async function removeTemporaries(fs: FileSystem, dir: string): Promise<void> {
  for (const name of await listDir(fs, dir)) if (name.startsWith('.') && name.endsWith('.tmp')) await unlinkIfPresent(fs, join(dir, name));
}

async function isAbsent(fs: FileSystem, path: string): Promise<boolean> {
  try {
    await fs.lstat(path);
    return false;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return true;
    throw error;
  }
}

interface LogStoreParts {
  fs: FileSystem;
  layout: Layout;
  logDir: string;
  readOnly: boolean;
  /** False for a view of an earlier layout: it reads the directory as it was at open. */
  follows: boolean;
  clock: () => Date;
  maxEventBytes: number;
  lock: WriterLock | undefined;
  storeId: string | undefined;
  observe: ObserverCall<StoreObserver> | undefined;
  segments: Segment[];
  index: StreamIndex;
}

class LogStore implements FileEventStore {
  readonly #p: LogStoreParts;
  readonly #segments: Segment[];
  readonly #index: StreamIndex;
  readonly #changes = new ChangeSignal();
  readonly #writer: LogWriter | undefined;
  readonly #blobs: BlobFiles;
  readonly #reads: ReadContext;
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly checkpoints: CheckpointSlot;
  #closed = false;
  /** The last position the newest index snapshot covers (that this store object knows of). */
  #indexSavedAt: number;
  /**
   * An index snapshot being saved or a segment being cleaned, one at a time: a snapshot taken before a cleaning
   * and saved after it would record the old segment's size.
   */
  #maintaining = false;
  /** Segments a cleaning replaced, kept open for the reads that hold them until the store closes. */
  readonly #retired: Segment[] = [];
  #poisoned: { reason: string; cause: unknown } | undefined;
  /** A view's catch-up with the writer under way, shared by the calls that need it. */
  #refreshing: Promise<void> | undefined;

  constructor(parts: LogStoreParts) {
    this.#p = parts;
    this.#segments = parts.segments;
    this.#index = parts.index;
    this.#indexSavedAt = parts.index.lastPosition;
    this.#blobs = new BlobFiles(parts.fs, parts.layout.blobs);
    const corrupt = (error: CorruptionError) => {
      parts.observe?.('corruptionFound', { error });
      this.#poison(`${error.file}${error.line === undefined ? '' : `:${error.line}`} is damaged`, error);
      return error;
    };
    this.#reads = { fs: parts.fs, index: this.#index, segments: this.#segments, corrupt };
    this.#writer = parts.readOnly
      ? undefined
      : new LogWriter({
          fs: parts.fs,
          logDir: parts.logDir,
          index: this.#index,
          segments: this.#segments,
          observe: parts.observe,
          changed: () => {
            this.#changes.notify();
            this.#saveIndexNowAndThen();
            this.#cleanNowAndThen();
          },
          poison: (reason, cause) => this.#poison(reason, cause),
          assertNotPoisoned: () => this.#assertNotPoisoned(),
        });
    this.checkpoints = createCheckpointSlot({
      fs: parts.fs,
      layout: parts.layout,
      storeId: () => parts.storeId,
      assertOpen: () => this.#assertOpen(),
      assertWritable: () => this.#assertWritable(),
      track: (work) => this.#track(work),
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async append(stream: StreamId, events: readonly NewEvent[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    this.#assertOpen();
    const validated = validateAppend(stream, events, options, this.#p.maxEventBytes);
    let chars = 0;
    for (const event of validated.events) chars += lineCharsBound(event.dataJson, event.type, event.eventId);
    if (chars > MAX_FLUSH_CHARS)
      throw new InvalidInputError('events', `the batch's lines could exceed ${MAX_FLUSH_CHARS} characters; split it into several appends`);
    const recordedAt = readClock(this.#p.clock);
    return (await this.#submit({ kind: 'append', stream, events: validated.events, chars, expected: validated.expectedRevision, recordedAt })) as AppendResult;
  }

  async read(stream: StreamId, options?: { fromRevision?: number }): Promise<StreamRead> {
    return this.#read(stream, options, eventFromRow);
  }

  async readStored(stream: StreamId, options?: { fromRevision?: number }): Promise<StoredStreamRead> {
    return this.#read(stream, options, storedEventFromRow);
  }

  async #read<T>(stream: StreamId, options: { fromRevision?: number } | undefined, fromRow: (row: EventRow) => T) {
    this.#assertOpen();
    validateStreamId(stream);
    const from = validateReadOptions(options);
    await this.#refresh();
    const entry = this.#index.entry(stream);
    if (entry === undefined || entry.revision === 0) return { revision: 0, events: new PagedEvents<T>([], undefined, fromRow) };
    // Everything the read returns is taken from the index before the first await: a write settling meanwhile
    // (a deletion, a compaction) shows in a later read, never in part of this one.
    const held = holdStream(this.#reads, entry);
    const snapshotRevision = held.snapshot?.mark.revision ?? 0;
    const snapshot = snapshotRevision >= from ? await readSnapshot(this.#reads, held) : undefined;
    const events = await streamEvents(this.#reads, held, snapshot !== undefined ? snapshotRevision + 1 : Math.max(from, snapshotRevision + 1), fromRow);
    return { revision: held.through, ...(snapshot !== undefined ? { snapshot } : {}), events };
  }

  readAll(options?: { fromPosition?: number }): AsyncIterable<FeedRecord> {
    this.#assertOpen();
    return this.#feed(validateReadAllOptions(options), eventFromRow as (row: EventRow) => FeedRecord);
  }

  readAllStored(options?: { fromPosition?: number }): AsyncIterable<StoredEvent> {
    this.#assertOpen();
    return this.#feed(validateReadAllOptions(options), storedEventFromRow);
  }

  async *#feed<T>(from: number, fromRow: (row: EventRow) => T): AsyncGenerator<T> {
    this.#assertOpen();
    await this.#refresh();
    for await (const rows of feedPages(this.#reads, from)) {
      for (const row of rows) {
        this.#assertOpen();
        yield fromRow(row);
      }
    }
  }

  follow(options?: FollowOptions): AsyncIterable<FeedRecord> {
    this.#assertOpen();
    if (!this.#p.follows)
      throw new StorageError(
        `@sessionfold/store-file: ${this.#p.layout.directory} is of an earlier layout; a read-only view of it cannot follow. Open it once as a writer to upgrade it.`,
      );
    const { fromPosition, signal, keepAlive } = validateFollowOptions(options);
    return followFeed(
      {
        readAll: (position) => this.readAll({ fromPosition: position }) as AsyncIterable<RecordedEvent>,
        changes: this.#changes,
        pollMs: this.#p.readOnly ? VIEW_POLL_MS : WRITER_POLL_MS,
        ...(this.#p.readOnly ? { changedElsewhere: () => this.#grew() } : {}),
        transient: passingFailure,
        ...(this.#p.observe ? { observe: this.#p.observe } : {}),
      },
      fromPosition,
      signal,
      keepAlive,
    ) as AsyncIterable<FeedRecord>;
  }

  async *streams(options?: { prefix?: string }): AsyncIterable<{ stream: StreamId; revision: number }> {
    this.#assertOpen();
    const prefix = validateStreamsOptions(options);
    await this.#refresh();
    const names: string[] = [];
    for (const [name, entry] of this.#index.streams) if (entry.revision > 0 && name.startsWith(prefix)) names.push(name);
    names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const name of names) {
      const revision = this.#index.entry(name)?.revision ?? 0;
      if (revision > 0) yield { stream: name, revision };
    }
  }

  async compact(stream: StreamId, snapshot: Snapshot): Promise<void> {
    this.#assertOpen();
    const validated = validateSnapshot(stream, snapshot);
    const recordedAt = readClock(this.#p.clock);
    const started = this.#p.observe ? performance.now() : 0;
    const entry = this.#index.entry(stream);
    const firstRun = entry?.firstEventRevision;
    const first = firstRun === undefined ? undefined : Math.max(firstRun, (entry?.snapshot?.revision ?? 0) + 1);
    await this.#submit({ kind: 'snapshot', stream, snapshot: validated, restore: false, recordedAt });
    const dropped = first === undefined ? 0 : Math.max(0, validated.revision - first + 1);
    this.#p.observe?.('compacted', { stream, revision: validated.revision, droppedEvents: dropped, durationMs: performance.now() - started });
  }

  async restoreStream(stream: StreamId, snapshot: Snapshot): Promise<AppendResult> {
    this.#assertOpen();
    validateNewStreamId(stream);
    const validated = validateSnapshot(stream, snapshot);
    const recordedAt = readClock(this.#p.clock);
    return (await this.#submit({ kind: 'snapshot', stream, snapshot: validated, restore: true, recordedAt })) as AppendResult;
  }

  async deleteStream(stream: StreamId, options: { expectedRevision: ExpectedRevision }): Promise<void> {
    this.#assertOpen();
    validateStreamId(stream);
    const expected = validateWriteOptions(options);
    const recordedAt = readClock(this.#p.clock);
    const owned = [...(this.#index.entry(stream)?.blobs ?? [])];
    await this.#submit({ kind: 'delete', stream, expected, recordedAt });
    // The deletion is durable: the blobs no other stream owns go (an interrupted removal leaves files no stream
    // owns, which verify reports and nothing reads).
    await this.#track(async () => {
      for (const sha of owned) if (!this.#index.owned(sha)) await this.#blobs.remove(sha).catch(() => undefined);
    });
  }

  async putBlob(stream: StreamId, bytes: Uint8Array): Promise<string> {
    this.#assertOpen();
    validateStreamId(stream);
    if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
    const sha = sha256Hex(bytes);
    // The owner is recorded first, so a blob file never exists that no stream claims.
    await this.#submit({ kind: 'blob', stream, sha256: sha, gone: false });
    await this.#track(async () => {
      try {
        await this.#blobs.put(sha, bytes);
      } catch (error) {
        if (error instanceof StorageError && error.poisoned) this.#poison('a blob failed to sync', error);
        // Otherwise the stream would come to own those bytes as soon as another stream stored them.
        else await this.#submit({ kind: 'blob', stream, sha256: sha, gone: true }).catch(() => undefined);
        throw error;
      }
    });
    return sha;
  }

  async getBlob(sha256: string): Promise<Uint8Array | undefined> {
    this.#assertOpen();
    validateSha256(sha256);
    await this.#refresh();
    if (!this.#index.owned(sha256)) return undefined;
    try {
      return await this.#blobs.get(sha256);
    } catch (error) {
      if (error instanceof CorruptionError) this.#p.observe?.('corruptionFound', { error });
      throw error;
    }
  }

  async *blobs(stream: StreamId): AsyncIterable<string> {
    this.#assertOpen();
    validateStreamId(stream);
    await this.#refresh();
    const owned = [...(this.#index.entry(stream)?.blobs ?? [])].sort();
    for (const sha of owned) if ((await this.#blobs.get(sha).catch(() => true)) !== undefined) yield sha;
  }

  async verify(options?: VerifyOptions): Promise<VerifyReport> {
    this.#assertOpen();
    await this.#refresh();
    return verifyLog(this.#p.fs, this.#p.layout, this.#segments, options);
  }

  async status(): Promise<StoreStatus> {
    this.#assertOpen();
    await this.#refresh();
    let streams = 0;
    let compactedStreams = 0;
    let compactedEvents = 0;
    for (const entry of this.#index.streams.values()) {
      if (entry.revision === 0) continue;
      streams++;
      if (entry.snapshot === undefined) continue;
      compactedStreams++;
      compactedEvents += entry.snapshot.revision;
    }
    const logBytes = this.#segments.reduce((sum, segment) => sum + segment.size, 0);
    let deadBytes = 0;
    for (const bytes of this.#index.dead.values()) deadBytes += bytes;
    return {
      kind: 'file',
      lastPosition: this.#index.lastPosition,
      // One process writes a file store: nothing but its own flushes can hold the feed back.
      holdingBack: [],
      details: {
        directory: this.#p.layout.directory,
        readOnly: this.#p.readOnly,
        storeId: this.#p.storeId ?? null,
        lockHolderPid: (await lockHolder(this.#p.fs, this.#p.layout.directory)) ?? null,
        formatVersion: this.#p.follows ? STORE_FORMAT_VERSION : null,
        streams,
        segments: this.#segments.length,
        logBytes,
        writesRefused: this.#poisoned?.reason ?? null,
        // Compaction: the streams with a snapshot and the revisions their snapshots cover; the log's bytes no
        // read asks for any more (covered events, replaced snapshots, deleted streams), and the sealed segments
        // dead enough that the writer rewrites them without those bytes in the background after its next write.
        compactedStreams,
        compactedEvents,
        deadBytes,
        segmentsToClean: segmentsToClean(this.#segments, this.#index).length,
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#changes.close();
    await this.#writer?.settled();
    await Promise.allSettled([...this.#inFlight]);
    await this.#writer?.close();
    // Only ever saves the next open work: failing to save it does not fail the close.
    if (this.#writer !== undefined && this.#poisoned === undefined && this.#index.lastPosition !== this.#indexSavedAt) {
      await saveIndexSnapshot(this.#p.fs, this.#p.layout.index, this.#segments, this.#index).catch(() => undefined);
    }
    for (const segment of [...this.#segments, ...this.#retired]) await segment.close(this.#p.fs);
    await this.#p.lock?.release().catch(() => undefined);
  }

  /**
   * Saves an index snapshot in the background once `INDEX_EVERY_POSITIONS` positions were added since the last
   * one, so a crash costs an open at most that much log to read.
   */
  #saveIndexNowAndThen(): void {
    if (this.#maintaining || this.#index.lastPosition - this.#indexSavedAt < INDEX_EVERY_POSITIONS) return;
    this.#maintaining = true;
    const at = this.#index.lastPosition;
    void this.#track(() => saveIndexSnapshot(this.#p.fs, this.#p.layout.index, this.#segments, this.#index))
      .then(
        () => {
          this.#indexSavedAt = at;
        },
        () => undefined,
      )
      .finally(() => {
        this.#maintaining = false;
      });
  }

  /**
   * Takes back, with one flush, the ownership of every blob whose file is absent: a put a crash cut short between
   * its owner line and its file. Run by a writer at open, so `verify` finds a missing blob only where bytes were lost.
   */
  async disownMissingBlobs(): Promise<void> {
    const files = new Set(await listDir(this.#p.fs, this.#p.layout.blobs));
    const takeBack: Promise<unknown>[] = [];
    for (const entry of this.#index.streams.values()) {
      for (const sha of entry.blobs ?? []) if (!files.has(sha)) takeBack.push(this.#submit({ kind: 'blob', stream: entry.name, sha256: sha, gone: true }));
    }
    await Promise.all(takeBack);
  }

  /** Cleans, in the background and one at a time, the sealed segments that are mostly dead (see `cleanSegment`). */
  #cleanNowAndThen(): void {
    if (this.#maintaining || this.#poisoned !== undefined || segmentsToClean(this.#segments, this.#index).length === 0) return;
    this.#maintaining = true;
    void this.#track(async () => {
      try {
        for (
          let next = segmentsToClean(this.#segments, this.#index)[0];
          next !== undefined && !this.#closed;
          next = segmentsToClean(this.#segments, this.#index)[0]
        ) {
          const cleaned = await cleanSegment(this.#p.fs, this.#p.logDir, next, this.#index, this.#p.layout.index);
          this.#segments[this.#segments.indexOf(next)] = cleaned;
          this.#retired.push(next);
          this.#indexSavedAt = 0;
        }
      } catch {
        // Cleaning only reclaims space: the log reads the same without it, and the next flush tries again.
      } finally {
        this.#maintaining = false;
      }
    });
  }

  async #submit(write: LogWrite): Promise<WriteOutcome> {
    this.#assertWritable();
    return (this.#writer as LogWriter).submit(write);
  }

  async #track<T>(work: () => Promise<T>): Promise<T> {
    const running = work();
    this.#inFlight.add(running);
    try {
      return await running;
    } finally {
      this.#inFlight.delete(running);
    }
  }

  /** A view reads what the writer added since it last looked: new lines of the last segment and new segments. */
  async #refresh(): Promise<void> {
    if (!this.#p.readOnly || !this.#p.follows) return;
    this.#refreshing ??= this.#catchUp().finally(() => {
      this.#refreshing = undefined;
    });
    await this.#refreshing;
  }

  async #catchUp(): Promise<void> {
    const { fs, logDir } = this.#p;
    const before = this.#index.lastPosition;
    await this.#readNewLines(fs, logDir);
    // Every follower of this view wakes, not only the one whose poll found the change.
    if (this.#index.lastPosition !== before) this.#changes.notify();
  }

  async #readNewLines(fs: FileSystem, logDir: string): Promise<void> {
    const found = await listSegments(fs, logDir);
    const bases = new Set(found.map((segment) => segment.base));
    let cleaned = false;
    for (const segment of this.#segments.slice(0, -1)) if (!bases.has(segment.base) || (await segment.replaced(fs))) cleaned = true;
    if (cleaned) {
      // The writer rewrote a sealed segment without its dead lines: what this view knew of its offsets is gone.
      // Reads under way keep the old files open; later ones use the log as it is now.
      const fresh = await readLog(fs, logDir, this.#p.layout.index, false);
      this.#retired.push(...this.#segments);
      this.#segments.splice(0, this.#segments.length, ...fresh.segments);
      this.#index.replaceWith(fresh.index);
      return;
    }
    for (const segment of found) if (segment.base > (this.#segments.at(-1)?.base ?? 0)) this.#segments.push(segment);
    for (let i = 0; i < this.#segments.length; i++) {
      const segment = this.#segments[i] as Segment;
      await catchUp(fs, this.#index, segment, i === this.#segments.length - 1, false);
    }
    refuseGaps(this.#index);
  }

  /** For a view's follower: whether the log grew since the index last caught up. */
  async #grew(): Promise<boolean> {
    const before = this.#index.lastPosition;
    await this.#refresh();
    return this.#index.lastPosition !== before;
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  #assertWritable(): void {
    this.#assertOpen();
    if (this.#p.readOnly) throw new StorageError(`@sessionfold/store-file: ${this.#p.layout.directory} was opened read-only.`);
    this.#assertNotPoisoned();
  }

  #assertNotPoisoned(): void {
    const poisoned = this.#poisoned;
    if (poisoned) {
      throw new StorageError(`@sessionfold/store-file: ${this.#p.layout.directory} refuses writes until it is reopened: ${poisoned.reason}.`, {
        cause: poisoned.cause,
        poisoned: true,
      });
    }
  }

  #poison(reason: string, cause: unknown): void {
    if (!this.#p.readOnly) this.#poisoned ??= { reason, cause };
  }
}
