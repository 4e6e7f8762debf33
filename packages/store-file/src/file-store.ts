import {
  ChangeSignal,
  ConcurrencyError,
  followFeed,
  readClock,
  CorruptionError,
  DEFAULT_MAX_EVENT_BYTES,
  InvalidInputError,
  revisionMatches,
  SessionfoldError,
  StorageError,
  StoreClosedError,
  validateAppend,
  validateNewStreamId,
  validateReadAllOptions,
  validateReadOptions,
  validateSha256,
  validateSnapshot,
  validateStreamId,
  validateStreamsOptions,
  validateWriteOptions,
  validateFollowOptions,
  storeObserverOf,
  type AppendResult,
  type ObserverCall,
  type StoreObserver,
  type CheckpointSlot,
  type FollowOptions,
  type StoreStatus,
  type DisposableEventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  type Snapshot,
  type StreamId,
  type StoredEvent,
  type StoredStreamRead,
  type StreamRead,
  type ValidatedAppend,
  type VerifyOptions,
  type VerifyReport,
} from '@sessionfold/core/kernel';
import { AtomicWriteDirectorySyncError } from '@sessionfold/atomic-write';
import { BlobStore } from './blob-store.js';
import { CaseCollisions, isCaseInsensitive } from './case-collisions.js';
import { createCheckpointSlot, ensureStoreId, readStoreId } from './checkpoint-slot.js';
import { followDirectory, transientFailure } from './follow-view.js';
import { BlankJournals } from './blank-journals.js';
import {
  errorCode,
  inlineCreateIo,
  inlineIo,
  readingFile,
  listDir,
  removeTemporariesOf,
  syncDir,
  unlinkIfPresent,
  withOverrides,
  type FileSystem,
  realDirectory,
} from './fs-layer.js';
import { compactJournal, liveFrom, locateRevision } from './journal-compact.js';
import type { JournalInfo } from './journal-scan.js';
import { Layout } from './layout.js';
import { acquireLock, lockHolder, type WriterLock } from './lock.js';
import { PositionSet } from './position-set.js';
import { Positions } from './positions.js';
import { encodeManifest, readManifest, stampOf, UNKNOWN_STAMP, writeManifest, type FileStamp, type Manifest, type ManifestStream } from './manifest.js';
import { captureManifest } from './manifest-capture.js';
import { ManifestTable } from './manifest-table.js';
import { cleanlyClosed, removeCleanClose, writeCleanClose } from './clean-close.js';
import { writeSnapshotFile, type SnapshotToWrite } from './snapshot-file.js';
import { loadStream, StaleManifestError, takenAsRecorded, type LoadedStream, type StreamFileNames } from './stream-load.js';
import { lineCharsBound, MAX_FLUSH_CHARS, StreamEntry, type ChangeMark, type StoreContext } from './stream-entry.js';
import { StreamFiles } from './stream-files.js';
import { StoreReader } from './store-reader.js';
import { PARSED, STORED } from './journal-events.js';
import { BASE_FORMAT_VERSION, EVENT_VERSIONS_FORMAT_VERSION, readStoreFormat, writeStoreFormat } from './store-format.js';
import { Tombstones } from './tombstones.js';
import { verifyDirectory, type KnownJournals } from './verify.js';

/** Options of `fileStore`. */
export interface FileStoreOptions {
  /** The store's directory; created (0700) when missing unless `readOnly`. */
  directory: string;
  /**
   * Open without the writer lock, as a view of the directory as it is at open; writes are refused and no
   * file is modified (a torn tail is ignored, not cut).
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

/** Journals scanned at once when opening: enough to overlap reads with hashing, few enough descriptors. */
const OPEN_CONCURRENCY = 32;
/** Journal write descriptors kept open; the least recently flushed idle ones are closed beyond this. */
const MAX_OPEN_JOURNALS = 256;
/**
 * The writer is the only one who changes its directory, and every change it settles wakes its followers at
 * once; the timer is only a safety net.
 */
const WRITER_FOLLOW_POLL_MS = 1000;
/**
 * The writer records a manifest at close and, in the background, once this many positions settled since the
 * last one, or after `MANIFEST_INTERVAL_MS` with any change: after a crash, open reads at most what was
 * written since, and of each journal only from its last checkpoint on.
 */
const MANIFEST_EVERY_POSITIONS = 10_000;
const MANIFEST_INTERVAL_MS = 30_000;

/**
 * Opens (creating if needed) a file store in `options.directory`: checksummed JSONL journals, snapshot files
 * and blobs. A writer takes the directory's exclusive lock, cuts torn tails and finishes interrupted deletes;
 * a damaged record it reads is a `CorruptionError` and nothing is rewritten. With a manifest from an earlier
 * writer, only the files changed since are read (see the README); `verify()` checks every file.
 */
export async function fileStore(options: FileStoreOptions): Promise<DisposableEventStore> {
  return (await openFileStore(options, undefined)).store;
}

/** A view and what it knows of the files, for the next view of a follow to start from (see `followDirectory`). */
export interface KnownView {
  store: DisposableEventStore;
  known(): Manifest;
}

/** `fileStore`, for a read-only view that may start from what an earlier view knew (`known`) instead of the manifest. */
async function openFileStore(options: FileStoreOptions, known: Manifest | undefined): Promise<KnownView> {
  if (typeof options !== 'object' || options === null) throw new InvalidInputError('options', 'expected { directory }');
  if (typeof options.directory !== 'string' || options.directory.length === 0) {
    throw new InvalidInputError('directory', 'fileStore needs the path of a directory');
  }
  const maxEventBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  if (!Number.isSafeInteger(maxEventBytes) || maxEventBytes < 1) throw new InvalidInputError('maxEventBytes', 'expected an integer ≥ 1');
  const readOnly = options.readOnly === true;
  const observe = storeObserverOf(options.observer);
  const fsl = withOverrides(options.fs);
  const layout = new Layout(realDirectory(options.directory));
  let lock: WriterLock | undefined;
  if (!readOnly) {
    await createDirectory(fsl, layout.directory);
    try {
      lock = await acquireLock(fsl, layout.directory);
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
      await fsl.lstat(layout.directory);
    } catch (cause) {
      throw new StorageError(`@sessionfold/store-file: cannot open ${layout.directory} read-only.`, { cause });
    }
  }
  try {
    // Read before anything is created or repaired: a layout of a newer release is not this one's to touch.
    const format = await readStoreFormat(fsl, layout.format);
    await refuseLinkedDirectories(fsl, layout);
    if (!readOnly) for (const dir of [layout.streams, layout.blobs, layout.owners]) await createDirectory(fsl, dir);
    const openView = (knownBefore: Manifest | undefined) =>
      openFileStore(
        {
          directory: layout.directory,
          readOnly: true,
          maxEventBytes,
          ...(options.fs ? { fs: options.fs } : {}),
          ...(options.observer ? { observer: options.observer } : {}),
        },
        knownBefore,
      );
    const store = new FileStore(
      fsl,
      layout,
      readOnly,
      options.clock ?? (() => new Date()),
      maxEventBytes,
      lock,
      Math.max(format, BASE_FORMAT_VERSION),
      openView,
      options.observer === undefined ? undefined : observe,
    );
    await store.open(known);
    if (!readOnly && format < BASE_FORMAT_VERSION) {
      try {
        await writeStoreFormat(fsl, layout.format, BASE_FORMAT_VERSION);
      } catch (error) {
        await store.close();
        throw error;
      }
    }
    return { store, known: () => store.known() };
  } catch (error) {
    await lock?.release().catch(() => undefined);
    if (error instanceof CorruptionError) observe('corruptionFound', { error });
    throw translate(error, `could not open ${layout.directory}`);
  }
}

class FileStore implements DisposableEventStore {
  readonly #fs: FileSystem;
  readonly #layout: Layout;
  readonly #readOnly: boolean;
  readonly #maxEventBytes: number;
  readonly #lock: WriterLock | undefined;
  readonly #entries = new Map<StreamId, StreamEntry>();
  readonly #blobs: BlobStore;
  readonly #ctx: StoreContext;
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #reader: StoreReader;
  /** Streams with an open journal descriptor, least recently flushed first. */
  readonly #openJournals = new Set<StreamEntry>();
  /** A writer's blank journals (none in a read-only view, nor on Windows, where a new name needs no directory fsync). */
  readonly #blanks: BlankJournals | undefined;
  #positions = new Positions(0);
  /** Set by `open()`. */
  #tombstones!: Tombstones;
  /** Set by `open()` on a case-insensitive directory, where ids that differ only in case would share files. */
  #cases: CaseCollisions | undefined;
  #closed = false;
  /** The format version recorded in the directory (what this writer records at open, when it was older). */
  #format: number;
  /** Recording the format that allows event schema versions; appends wait for it so they keep their order. */
  #formatWrite: Promise<void> | undefined;
  /** Why the store refuses writes until it is reopened: a failed sync, or damage found in what writes build on. */
  #poisoned: { reason: string; cause: unknown } | undefined;
  /** Wakes this process's followers when a change settles, and ends them at close. */
  readonly #changes = new ChangeSignal();
  readonly #openView: (known: Manifest | undefined) => Promise<KnownView>;
  /** A read-only view's knowledge of each stream's files, with their stamps as they were before it read them. */
  readonly #known = new Map<StreamId, ManifestStream>();
  readonly #observe: ObserverCall<StoreObserver>;
  /** Set by `open()`; undefined in a read-only view of a store no writer has given an id yet. */
  #storeId: string | undefined;
  /** The watermark the last manifest recorded (or open found). */
  #manifestAt = 0;
  #manifestSave: Promise<void> | undefined;
  /** Checksum of the manifest as last read or written (what a clean-close mark names). */
  #manifestChecksum: string | undefined;
  /** Changes settled since open. */
  #settles = 0;
  /** The value of `#settles` the manifest on disk describes every stream's files at; undefined when it does not. */
  #manifestSettles: number | undefined;
  #manifestTimer: NodeJS.Timeout | undefined;
  readonly checkpoints: CheckpointSlot;

  constructor(
    fsl: FileSystem,
    layout: Layout,
    readOnly: boolean,
    clock: () => Date,
    maxEventBytes: number,
    lock: WriterLock | undefined,
    format: number,
    openView: (known: Manifest | undefined) => Promise<KnownView>,
    observe: ObserverCall<StoreObserver> | undefined,
  ) {
    this.#openView = openView;
    this.#observe = observe ?? (() => undefined);
    this.checkpoints = createCheckpointSlot({
      fs: fsl,
      layout,
      storeId: () => this.#storeId,
      assertOpen: () => this.#assertOpen(),
      assertWritable: () => this.#assertWritable(),
      track: (work) => this.#track(work),
    });
    this.#fs = fsl;
    this.#format = format;
    this.#layout = layout;
    this.#readOnly = readOnly;
    this.#maxEventBytes = maxEventBytes;
    this.#lock = lock;
    this.#blobs = new BlobStore(fsl, layout);
    this.#blanks = readOnly || process.platform === 'win32' ? undefined : new BlankJournals(fsl, layout);
    const store = this;
    this.#reader = new StoreReader({
      fs: fsl,
      layout,
      readOnly,
      entries: this.#entries,
      entryFor: (stream) => this.#entry(stream),
      positions: () => this.#positions,
      corrupted: (error) => this.#damaged(error),
    });
    this.#ctx = {
      fs: fsl,
      inlineIo: inlineIo(fsl),
      inlineCreateIo: inlineCreateIo(fsl),
      flushLoops: { running: 0 },
      layout,
      blanks: this.#blanks,
      get positions() {
        return store.#positions;
      },
      now: () => readClock(clock),
      assertNotPoisoned: () => this.#assertNotPoisoned(),
      wasDeleted: (stream) => this.#tombstones.marks.has(stream),
      poison: (reason, cause) => this.#poison(reason, cause),
      damaged: (error) => this.#damaged(error),
      touched: (entry) => this.#touched(entry),
      changing: (entry, position) => this.#reader.changing(entry, position),
      observe: this.#observe,
      observing: observe !== undefined,
    };
  }

  /**
   * Reads the directory: tombstones, blob owners, the manifest, then each stream's files — only what changed
   * since the manifest recorded them (see `loadStream`), every line of the rest; finishes interrupted deletes.
   * After a clean close (the mark names the manifest, see `cleanlyClosed`) the files the manifest records are
   * taken as recorded without a look at each; a writer removes the mark durably before it changes anything.
   */
  async open(known?: Manifest): Promise<void> {
    const repair = !this.#readOnly;
    // Before anything lists the streams: a journal whose rename from a blank a crash lost is put back first.
    if (repair) await this.#blanks?.recover();
    // A writer holds the lock, so the listing may be taken while the manifest is read and decoded (it can be
    // large): nothing else changes the directory. Temporary files in it are ignored, then removed.
    const early = repair ? listDir(this.#fs, this.#layout.streams) : undefined;
    early?.catch(() => undefined);
    let manifest = known;
    let trusted = false;
    if (!known) {
      const stored = await readManifest(this.#fs, this.#layout.manifest);
      manifest = stored?.manifest;
      this.#manifestChecksum = stored?.checksum;
      // Read after the manifest: a mark still there then means no writer had changed anything since it was written.
      trusted = stored !== undefined && (await cleanlyClosed(this.#fs, this.#layout.cleanClose, stored.checksum, this.#layout.manifest));
      // Before anything changes: from now on a crash must leave no mark.
      if (repair) await removeCleanClose(this.#fs, this.#layout.cleanClose, this.#layout.directory);
    }
    const listedEarly = await early;
    if (listedEarly) await this.#removeTemporaries(listedEarly);
    this.#tombstones = await Tombstones.load(this.#fs, this.#layout.tombstones, repair);
    await this.#blobs.load(repair);
    if (await isCaseInsensitive(this.#fs, this.#layout.directory)) this.#cases = new CaseCollisions();

    // One of four shared values per stream: listing many streams builds nothing for each.
    const names = new Map<StreamId, StreamFileNames>();
    for (const name of listedEarly ?? (await listDir(this.#fs, this.#layout.streams))) {
      const parsed = Layout.parseStreamFile(name);
      if (!parsed) continue;
      const files = names.get(parsed.stream) ?? NO_FILES;
      names.set(parsed.stream, parsed.kind === 'journal' ? filesOf(true, files.snapshot) : filesOf(files.journal, true));
    }
    for (const stream of [...names.keys(), ...this.#blobs.owners()]) this.#cases?.claim(stream);
    /** Streams taken from the manifest without reading a file: when that is every stream it lists, it is current. */
    let asRecorded = 0;
    const loadAll = async (records: Manifest | undefined): Promise<number> => {
      this.#entries.clear();
      this.#known.clear();
      const found = new PositionSet();
      for (const mark of this.#tombstones.marks.values()) found.claim(mark.position, this.#layout.tombstones, undefined);
      const load = {
        fs: this.#fs,
        layout: this.#layout,
        repair,
        positions: found,
        manifestPosition: records?.position ?? 0,
        trusted: trusted && records !== undefined,
        owned: known === undefined,
        deletedSince: (stream: StreamId) => (this.#tombstones.marks.get(stream)?.position ?? 0) > (records?.position ?? 0),
      };
      let max = this.#tombstones.maxPosition;
      let failed = false;
      asRecorded = 0;
      const take = (stream: StreamId, { snapshot, journal, idsPending, stamps, unread }: LoadedStream) => {
        if (unread) asRecorded++;
        this.#entries.set(stream, new StreamEntry(this.#ctx, stream, { journal, snapshot, idsPending }));
        if (this.#readOnly) this.#known.set(stream, knownOf(snapshot, journal, stamps));
        max = Math.max(max, snapshot?.position ?? 0, journal?.maxPosition ?? 0);
      };
      // What the manifest vouches for is taken at once; only the rest waits on the file system.
      const queue: [StreamId, StreamFileNames, ManifestStream | undefined][] = [];
      const table = load.trusted && !this.#readOnly && records?.streams instanceof ManifestTable ? records.streams : undefined;
      if (table) {
        // The rows the listing agrees with are kept as the table's rows: nothing is built for them until used.
        for (let row = 0; row < table.size; row++) {
          const stream = table.name(row);
          const files = names.get(stream);
          if (files === undefined || !vouches(table, row, files)) continue;
          // A stream listed twice: the manifest cannot be what a writer recorded.
          if (this.#entries.has(stream)) throw new StaleManifestError(this.#layout.manifest);
          asRecorded++;
          this.#entries.set(stream, StreamEntry.recorded(this.#ctx, stream, table, row));
          max = Math.max(max, table.maxPosition(row));
        }
      }
      for (const [stream, files] of table && asRecorded === names.size ? [] : names) {
        if (this.#entries.has(stream)) continue;
        const record = records?.streams.get(stream);
        const loaded = record && takenAsRecorded(load, files, record);
        if (loaded) take(stream, loaded);
        else queue.push([stream, files, record]);
      }
      const worker = async () => {
        for (let next = queue.pop(); next && !failed; next = queue.pop()) {
          const [stream, files, record] = next;
          try {
            take(stream, await loadStream(load, stream, files, record));
          } catch (error) {
            failed = true;
            throw error;
          }
        }
      };
      // Every worker stops before the next attempt starts over.
      const outcomes = await Promise.allSettled(Array.from({ length: OPEN_CONCURRENCY }, worker));
      for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
      return max;
    };
    let maxPosition: number;
    const usable = manifest?.formatVersion === this.#format ? manifest : undefined;
    let current = usable !== undefined;
    try {
      maxPosition = await loadAll(usable);
    } catch (error) {
      if (!(error instanceof StaleManifestError)) throw error;
      current = false;
      maxPosition = await loadAll(undefined);
    }
    current &&= asRecorded === names.size && asRecorded === usable?.streams.size;

    for (const [stream, mark] of this.#tombstones.marks) {
      const entry = this.#entry(stream);
      const contentMax = Math.max(entry.snapshot?.position ?? 0, entry.journal.maxPosition);
      const leftovers = entry.journalExists || entry.snapshot !== undefined;
      if (leftovers && mark.position > contentMax) {
        // A delete was recorded but the process died before removing every file: finish it.
        if (repair) {
          current = false;
          await this.#removeStreamFiles(stream);
          this.#cases?.release(stream);
        }
        entry.reset(mark);
      } else {
        entry.setTombstone(mark);
      }
    }
    this.#reader.seed();
    this.#settles = 0;
    this.#manifestSettles = current ? 0 : undefined;
    this.#positions = new Positions(maxPosition, () => {
      this.#settles++;
      this.#changes.notify();
      if (this.#positions.watermark - this.#manifestAt >= MANIFEST_EVERY_POSITIONS) this.#saveManifestSoon();
    });
    this.#manifestAt = maxPosition;
    this.#storeId = repair ? await ensureStoreId(this.#fs, this.#layout) : await readStoreId(this.#fs, this.#layout);
    if (repair) {
      this.#blanks?.prepare();
      this.#manifestTimer = setInterval(() => {
        if (this.#positions.watermark !== this.#manifestAt) this.#saveManifestSoon();
      }, MANIFEST_INTERVAL_MS);
      this.#manifestTimer.unref();
    }
  }

  /** Starts recording the manifest in the background, unless a recording is under way; never on an append's path. */
  #saveManifestSoon(): void {
    if (this.#manifestSave || this.#closed) return;
    const saving = this.#track(async () => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      await this.#saveManifest(true);
    })
      .catch(() => undefined)
      .finally(() => {
        this.#manifestSave = undefined;
      });
    this.#manifestSave = saving;
  }

  /**
   * Records what the streams hold now. Not after writes were refused: the state may then differ from the files
   * (the last manifest stays, and open checks it against the files as always).
   */
  async #saveManifest(reuseStamps: boolean): Promise<void> {
    if (this.#poisoned) return;
    const at = this.#positions.watermark;
    const settles = this.#settles;
    const { columns, complete } = await captureManifest(this.#fs, this.#layout, this.#entries, reuseStamps);
    const checksum = await writeManifest(this.#fs, this.#layout.manifest, encodeManifest(this.#format, at, columns));
    this.#manifestChecksum = checksum;
    // Only a manifest whose every stamp was just looked at may be vouched for by the clean-close mark.
    this.#manifestSettles = complete && !reuseStamps && this.#settles === settles ? settles : undefined;
    this.#manifestAt = Math.max(this.#manifestAt, at);
  }

  /**
   * At close, once everything settled: makes sure the manifest describes every file as it is (writing it only
   * when something changed since it was read or written), then leaves the clean-close mark naming it. Not
   * after writes were refused, nor when a failed write may have left bytes past a journal's end.
   */
  async #closeCleanly(): Promise<void> {
    if (this.#poisoned) return;
    for (const entry of this.#entries.values()) if (entry.dirty) return;
    if (this.#manifestSettles !== this.#settles || this.#manifestChecksum === undefined) await this.#saveManifest(false);
    if (this.#manifestSettles !== this.#settles || this.#manifestChecksum === undefined) return;
    const stamp = await stampOf(this.#fs, this.#layout.manifest);
    if (stamp) await writeCleanClose(this.#fs, this.#layout.cleanClose, this.#manifestChecksum, stamp);
  }

  /**
   * What this read-only view knows of the files. Its position is 0: the writer flushes streams in parallel, so
   * a line written after this view opened may hold a position below ones it saw.
   */
  known(): Manifest {
    return { formatVersion: this.#format, position: 0, streams: this.#known };
  }

  append(stream: StreamId, events: readonly NewEvent[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult> {
    // Not tracked like the other writes: `close` drains every stream's queue, which holds every accepted append.
    try {
      this.#assertOpen();
      const batch = validateAppend(stream, events, options, this.#maxEventBytes);
      this.#assertWritable();
      this.#cases?.claim(stream);
      const { copies, dataJson, chars, versioned } = ownCopies(batch);
      if (chars > MAX_FLUSH_CHARS) {
        throw new InvalidInputError('events', `the batch's journal lines could exceed ${MAX_FLUSH_CHARS} characters; split it into several appends`);
      }
      const write = () => this.#entry(stream).append(copies, dataJson, chars, batch.expectedRevision);
      if (versioned && this.#format < EVENT_VERSIONS_FORMAT_VERSION && this.#formatWrite === undefined) this.#recordEventVersionsFormat();
      const recording = this.#formatWrite;
      if (recording === undefined) return write();
      // Once per store at most: appends made meanwhile wait for the format, so they keep the order they came in.
      // Only the versioned ones depend on it: the others are written even if recording it failed.
      return this.#track(() => (versioned ? recording.then(write) : recording.then(write, write)));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async read(stream: StreamId, options?: { fromRevision?: number }): Promise<StreamRead> {
    this.#assertOpen();
    validateStreamId(stream);
    this.#cases?.check(stream);
    // What the file system refuses (a directory in a file's place, EIO) is a StorageError naming the journal.
    return readingFile(this.#layout.journal(stream), () => this.#reader.read(stream, validateReadOptions(options), PARSED));
  }

  readAll(options?: { fromPosition?: number }): AsyncIterable<RecordedEvent> {
    this.#assertOpen();
    return this.#reader.readAll(validateReadAllOptions(options), PARSED);
  }

  async readStored(stream: StreamId, options?: { fromRevision?: number }): Promise<StoredStreamRead> {
    this.#assertOpen();
    validateStreamId(stream);
    this.#cases?.check(stream);
    return readingFile(this.#layout.journal(stream), () => this.#reader.read(stream, validateReadOptions(options), STORED));
  }

  readAllStored(options?: { fromPosition?: number }): AsyncIterable<StoredEvent> {
    this.#assertOpen();
    return this.#reader.readAll(validateReadAllOptions(options), STORED);
  }

  async *streams(options?: { prefix?: string }): AsyncIterable<{ stream: StreamId; revision: number }> {
    this.#assertOpen();
    const prefix = validateStreamsOptions(options);
    const found = [...this.#entries.values()].filter((entry) => entry.revision > 0 && entry.name.startsWith(prefix));
    found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of found) yield { stream: entry.name, revision: entry.revision };
  }

  compact(stream: StreamId, snapshot: Snapshot): Promise<void> {
    return this.#track(async () => {
      this.#assertOpen();
      const kept = validateSnapshot(stream, snapshot);
      this.#assertWritable();
      this.#cases?.check(stream);
      const entry = this.#entries.get(stream);
      if (!entry || entry.revision === 0) throw new InvalidInputError('stream', `stream ${stream} does not exist`);
      const started = performance.now();
      await entry.exclusive(async () => {
        this.#assertNotPoisoned();
        if (entry.revision === 0) throw new InvalidInputError('stream', `stream ${stream} does not exist`);
        if (kept.revision > entry.revision) {
          throw new InvalidInputError('snapshot.revision', `revision ${kept.revision} is past the stream's revision ${entry.revision}`);
        }
        if (entry.snapshot && kept.revision < entry.snapshot.revision) {
          throw new InvalidInputError('snapshot.revision', `revision ${kept.revision} is older than the stored snapshot's ${entry.snapshot.revision}`);
        }
        const path = this.#layout.journal(stream);
        // Compaction reads the journal to find where to cut and to copy what it keeps: damage found there is
        // damage in what writes build on.
        const cut = entry.journalExists ? await this.#noticing(locateRevision(this.#fs, path, entry.journal, kept.revision + 1)) : undefined;
        // The version being replaced keeps its own description of the journal: appends after this one grow only the new.
        const journal = cut ? liveFrom(entry.journal, cut) : { ...entry.journal, checkpoints: [...entry.journal.checkpoints] };
        const covered = entry.snapshot?.revision ?? 0;
        await this.#writeSnapshot(entry, kept, journal, async () => {
          if (cut) await this.#noticing(compactJournal(this.#ctx, entry, path, cut, kept.revision));
        });
        this.#observe('compacted', { stream, revision: kept.revision, droppedEvents: kept.revision - covered, durationMs: performance.now() - started });
      });
    });
  }

  restoreStream(stream: StreamId, snapshot: Snapshot): Promise<AppendResult> {
    return this.#track(async () => {
      this.#assertOpen();
      validateNewStreamId(stream);
      const kept = validateSnapshot(stream, snapshot);
      this.#assertWritable();
      this.#cases?.claim(stream);
      const entry = this.#entry(stream);
      return entry.exclusive(async () => {
        this.#assertNotPoisoned();
        if (entry.revision !== 0) throw new ConcurrencyError(stream, 'no_stream', entry.revision);
        const mark = await this.#writeSnapshot(entry, kept, { ...entry.journal, lastRevision: kept.revision }, async () => undefined);
        entry.setRevision(kept.revision);
        return { revision: kept.revision, position: mark.position };
      });
    });
  }

  deleteStream(stream: StreamId, options: { expectedRevision: ExpectedRevision }): Promise<void> {
    return this.#track(async () => {
      this.#assertOpen();
      validateStreamId(stream);
      const expected = validateWriteOptions(options);
      this.#assertWritable();
      this.#cases?.check(stream);
      const entry = this.#entries.get(stream);
      const wasDeleted = () => expected === 'never_existed' && this.#tombstones.marks.has(stream);
      if (!entry) {
        if (!revisionMatches(expected, 0, wasDeleted())) throw new ConcurrencyError(stream, expected, 0);
        return;
      }
      await entry.exclusive(async () => {
        this.#assertNotPoisoned();
        const actual = entry.revision;
        if (!revisionMatches(expected, actual, wasDeleted())) throw new ConcurrencyError(stream, expected, actual);
        if (actual === 0) return;
        const recordedAt = this.#ctx.now();
        const position = this.#positions.reserve(1);
        this.#reader.changing(entry, position);
        let settled = false;
        try {
          const mark: ChangeMark = { revision: actual, position, recordedAt };
          try {
            await this.#tombstones.add(stream, mark);
          } catch (error) {
            if (error instanceof StorageError && error.poisoned) this.#poison(`${this.#layout.tombstones} failed to sync`, error);
            throw error;
          }
          // The tombstone is durable: the stream is gone whatever happens to its files next (open finishes the job).
          await entry.closeFile();
          const old = entry.files;
          const retired = await old.retire(this.#fs, this.#layout.journal(stream), this.#layout.snapshot(stream)).then(
            () => old,
            () => undefined,
          );
          entry.reset(mark, retired);
          this.#positions.settle(position);
          settled = true;
          try {
            await this.#removeStreamFiles(stream);
            this.#cases?.release(stream);
          } catch (cause) {
            this.#poison(`the files of the deleted stream ${stream} could not all be removed`, cause);
            throw new StorageError(`Deleted ${stream}, but could not remove all of its files; reopen the store to finish.`, { cause, poisoned: true });
          }
        } finally {
          // Not handed out again: a tombstone write that failed and could not be cut back may still hold it.
          if (!settled) this.#positions.settle(position);
          this.#reader.letGoOfHeld(entry);
        }
      });
    });
  }

  putBlob(stream: StreamId, bytes: Uint8Array): Promise<string> {
    return this.#track(async () => {
      this.#assertOpen();
      validateStreamId(stream);
      if (!(bytes instanceof Uint8Array)) throw new InvalidInputError('bytes', 'expected a Uint8Array');
      this.#assertWritable();
      this.#cases?.claim(stream);
      try {
        return await this.#blobs.put(stream, Uint8Array.from(bytes));
      } catch (error) {
        if (error instanceof StorageError && error.poisoned) this.#poison('a blob failed to sync', error);
        throw error;
      }
    });
  }

  async getBlob(sha256: string): Promise<Uint8Array | undefined> {
    this.#assertOpen();
    validateSha256(sha256);
    return this.#blobs.get(sha256);
  }

  async *blobs(stream: StreamId): AsyncIterable<string> {
    this.#assertOpen();
    validateStreamId(stream);
    this.#cases?.check(stream);
    yield* this.#blobs.list(stream);
  }

  /** Reads every file of the directory and reports what is damaged; writes nothing (see `verifyDirectory`). */
  async verify(options?: VerifyOptions): Promise<VerifyReport> {
    this.#assertOpen();
    // Files are also checked against what this store object knows of them: a journal cut by hand is consistent with itself.
    const known: KnownJournals = {
      of: (stream) => {
        const entry = this.#entries.get(stream);
        return entry && entry.revision > 0 && entry.journalExists ? { length: entry.journal.length, ino: entry.journal.ino } : undefined;
      },
      streams: () => [...this.#entries.keys()],
    };
    return verifyDirectory(this.#fs, this.#layout, options?.signal ?? undefined, known);
  }

  /**
   * The writer yields each change as it settles (woken by its own commits); a read-only view polls the
   * directory every 50 ms and yields changes once they have been on disk for 100 ms, within about 200 ms plus
   * twice the time of one read: an `lstat` of every stream file and a read of the journals changed since the
   * previous read, each from its last checkpoint (at most 255 lines before the new ones; see `followDirectory`).
   */
  follow(options?: FollowOptions): AsyncIterable<RecordedEvent> {
    this.#assertOpen();
    const { fromPosition, signal, keepAlive } = validateFollowOptions(options);
    if (this.#readOnly) {
      return followDirectory(
        { fs: this.#fs, layout: this.#layout, openView: this.#openView, changes: this.#changes, observe: this.#observe },
        fromPosition,
        signal,
        keepAlive,
      );
    }
    return followFeed(
      {
        readAll: (from) => this.readAll({ fromPosition: from }),
        changes: this.#changes,
        pollMs: WRITER_FOLLOW_POLL_MS,
        transient: transientFailure,
        observe: this.#observe,
      },
      fromPosition,
      signal,
      keepAlive,
    );
  }

  /**
   * The directory, the store id, who holds the writer lock (a live pid, or null), the streams and the last
   * position as this store object knows them (a view: as of its open), and why writes are refused, if they are.
   */
  async status(): Promise<StoreStatus> {
    this.#assertOpen();
    let streams = 0;
    for (const entry of this.#entries.values()) if (entry.revision > 0) streams++;
    return {
      kind: 'file',
      lastPosition: this.#positions.watermark,
      // One process writes a file store: nothing but its own flushes can hold the feed back.
      holdingBack: [],
      details: {
        directory: this.#layout.directory,
        readOnly: this.#readOnly,
        storeId: this.#storeId ?? null,
        lockHolderPid: (await lockHolder(this.#fs, this.#layout.directory)) ?? null,
        streams,
        writesRefused: this.#poisoned?.reason ?? null,
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#manifestTimer);
    this.#changes.close();
    // Compactions, deletes, restores and blob writes first: appends held back by them join the queues drained next.
    await Promise.allSettled([...this.#inFlight]);
    for (const entry of this.#entries.values()) {
      await entry.drain();
      await entry.closeFile();
    }
    this.#reader.closeAll();
    // Every journal renamed from a blank gets a durable name before the store says it closed cleanly.
    await this.#blanks?.close().catch(() => undefined);
    // Everything is settled: the next open reads only the manifest and the files changed after it. It only
    // ever saves work, so failing to record it does not fail the close.
    if (!this.#readOnly) await this.#closeCleanly().catch(() => undefined);
    // Versions held back for feed reads keep descriptors on replaced files: nothing will read them now.
    for (const entry of this.#entries.values()) entry.dropHeldVersions(Number.MAX_SAFE_INTEGER);
    await this.#lock?.release().catch(() => undefined);
  }

  /** `close()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #touched(entry: StreamEntry): void {
    this.#openJournals.delete(entry);
    this.#openJournals.add(entry);
    if (this.#openJournals.size <= MAX_OPEN_JOURNALS) return;
    for (const old of this.#openJournals) {
      if (this.#openJournals.size <= MAX_OPEN_JOURNALS) break;
      if (!old.hasOpenFile) this.#openJournals.delete(old);
      else if (old.idle && old !== entry) {
        this.#openJournals.delete(old);
        void old.closeFile();
      }
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreClosedError(`file store ${this.#layout.directory}`);
  }

  #assertWritable(): void {
    this.#assertOpen();
    if (this.#readOnly) throw new StorageError(`@sessionfold/store-file: ${this.#layout.directory} was opened read-only.`);
    this.#assertNotPoisoned();
  }

  /**
   * Checked again when a queued write runs: a write accepted before `close` still completes, but not after a
   * failed sync or once damage was found in what writes build on (journals, snapshots), so it is never built on.
   */
  #assertNotPoisoned(): void {
    const poisoned = this.#poisoned;
    if (poisoned) {
      throw new StorageError(`@sessionfold/store-file: ${this.#layout.directory} refuses writes until it is reopened: ${poisoned.reason}.`, {
        cause: poisoned.cause,
        poisoned: true,
      });
    }
  }

  /** Passes `work`'s outcome on; a `CorruptionError` also poisons the store. */
  async #noticing<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      if (error instanceof CorruptionError) this.#damaged(error);
      throw error;
    }
  }

  /** Damage in a journal or snapshot: reported, and nothing more is written on top of it until the store is reopened. */
  #damaged(error: CorruptionError): void {
    this.#observe('corruptionFound', { error });
    this.#poison(`${error.file}${error.line === undefined ? '' : `:${error.line}`} is damaged`, error);
  }

  /** The first reason is kept: it is the one to fix. */
  #poison(reason: string, cause: unknown): void {
    this.#poisoned ??= { reason, cause };
  }

  #entry(stream: StreamId): StreamEntry {
    let entry = this.#entries.get(stream);
    if (!entry) this.#entries.set(stream, (entry = new StreamEntry(this.#ctx, stream)));
    return entry;
  }

  /** Starts recording the format whose journal lines may carry `schemaVersion`, before the first such line is written. */
  #recordEventVersionsFormat(): void {
    const recording: Promise<void> = writeStoreFormat(this.#fs, this.#layout.format, EVENT_VERSIONS_FORMAT_VERSION)
      .then(() => {
        this.#format = EVENT_VERSIONS_FORMAT_VERSION;
      })
      .finally(() => {
        // After a failure (which fails the versioned appends that waited) the next versioned append tries again.
        if (this.#formatWrite === recording) this.#formatWrite = undefined;
      });
    this.#formatWrite = recording;
  }

  /** Runs an operation so that `close` can wait for it. */
  #track<T>(operation: () => Promise<T>): Promise<T> {
    let promise: Promise<T>;
    try {
      promise = operation();
    } catch (error) {
      return Promise.reject(error);
    }
    this.#inFlight.add(promise);
    const forget = () => this.#inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  /**
   * Writes the snapshot (taking a new position for its `$snapshot` change), makes it current with `journal`
   * (the journal as it reads after the snapshot), settles the change's position, then runs `after` (the journal
   * rewrite). The version it replaces stays readable for readers that started on it.
   */
  async #writeSnapshot(
    entry: StreamEntry,
    snapshot: Omit<SnapshotToWrite, 'position' | 'recordedAt'>,
    journal: JournalInfo,
    after: () => Promise<void>,
  ): Promise<ChangeMark> {
    const recordedAt = this.#ctx.now();
    const position = this.#positions.reserve(1);
    this.#reader.changing(entry, position);
    const mark: ChangeMark = { revision: snapshot.revision, position, recordedAt };
    let settled = false;
    const install = () => {
      // The retired version's pin passes to `before`: feed reads below the new position still show it.
      const next = new StreamFiles(mark, journal, position, old);
      entry.useFiles(next);
      // Events the snapshot covers leave the stream at once, even while the journal still holds them.
      for (const [id, where] of journal.eventIds) if (where.revision <= mark.revision) journal.eventIds.delete(id);
      // The change is durable: the feed may show it now, while the journal is still being rewritten.
      this.#positions.settle(position);
      settled = true;
    };
    const old = entry.files;
    try {
      await old.retire(this.#fs, this.#layout.journal(entry.name), this.#layout.snapshot(entry.name));
      try {
        await writeSnapshotFile(this.#fs, this.#layout.snapshot(entry.name), { ...snapshot, position, recordedAt });
      } catch (cause) {
        if (!(cause instanceof AtomicWriteDirectorySyncError)) {
          entry.useFiles(old.unretired());
          old.release();
          throw new StorageError(`@sessionfold/store-file: could not write the snapshot of ${entry.name}.`, { cause });
        }
        // The new file is in place but its name may not survive a crash: use it, refuse further writes.
        this.#poison(`the snapshot of ${entry.name} failed to sync`, cause);
        install();
        throw new StorageError(`@sessionfold/store-file: could not sync the snapshot of ${entry.name}; reopen the store.`, { cause, poisoned: true });
      }
      install();
      await after();
      return mark;
    } finally {
      // Not written: the position is handed out again if nothing was reserved after it.
      if (!settled) this.#positions.release(position);
      this.#reader.letGoOfHeld(entry);
    }
  }

  async #removeStreamFiles(stream: StreamId): Promise<void> {
    await this.#blobs.dropOwner(stream);
    await unlinkIfPresent(this.#fs, this.#layout.journal(stream));
    await unlinkIfPresent(this.#fs, this.#layout.snapshot(stream));
    await syncDir(this.#fs, this.#layout.streams);
  }

  /** Temporary siblings of interrupted atomic writes; we hold the lock, so none of them is still being written. */
  async #removeTemporaries(streams: readonly string[]): Promise<void> {
    for (const dir of [this.#layout.streams, this.#layout.blobs, this.#layout.owners]) {
      for (const name of dir === this.#layout.streams ? streams : await listDir(this.#fs, dir)) {
        if (Layout.isTemporary(name)) await unlinkIfPresent(this.#fs, `${dir}/${name}`);
      }
    }
    await removeTemporariesOf(this.#fs, this.#layout.manifest);
    await removeTemporariesOf(this.#fs, this.#layout.cleanClose);
  }
}

/**
 * What the store keeps of a validated batch until it is written: type, eventId and schema version as validation read them (the
 * caller's objects are not read again), and the data as the JSON validation produced. Also bounds the length of
 * the batch's lines (`lineCharsBound`) and notes whether any line will carry a schema version, in the same pass.
 */
function ownCopies(batch: ValidatedAppend): { copies: NewEvent[]; dataJson: string[]; chars: number; versioned: boolean } {
  const count = batch.events.length;
  const copies = new Array<NewEvent>(count);
  const dataJson = new Array<string>(count);
  let chars = 0;
  let versioned = false;
  for (let i = 0; i < count; i++) {
    const { type, eventId, dataJson: json, schemaVersion } = batch.events[i] as ValidatedAppend['events'][number];
    const copy: NewEvent = eventId === undefined ? { type, data: null } : { type, data: null, eventId };
    if (schemaVersion !== 1) {
      copy.schemaVersion = schemaVersion;
      versioned = true;
    }
    copies[i] = copy;
    dataJson[i] = json;
    chars += lineCharsBound(json, type, eventId);
  }
  return { copies, dataJson, chars, versioned };
}

/** A stream as a view loaded it, for the next view: a journal's stamp counts only if it was taken at the length read. */
function knownOf(
  snapshot: ChangeMark | undefined,
  journal: JournalInfo | undefined,
  stamps: { snapshot?: FileStamp | undefined; journal?: FileStamp | undefined },
): ManifestStream {
  const known: ManifestStream = {};
  if (snapshot) known.snapshot = { mark: snapshot, stamp: stamps.snapshot ?? UNKNOWN_STAMP };
  if (journal) known.journal = { info: journal, stamp: stamps.journal?.size === journal.length ? stamps.journal : UNKNOWN_STAMP };
  return known;
}

const NO_FILES: StreamFileNames = { journal: false, snapshot: false };
const FILE_NAMES: readonly StreamFileNames[] = [
  NO_FILES,
  { journal: true, snapshot: false },
  { journal: false, snapshot: true },
  { journal: true, snapshot: true },
];

/** The shared value for a stream with these files (never changed). */
function filesOf(journal: boolean, snapshot: boolean): StreamFileNames {
  return FILE_NAMES[(journal ? 1 : 0) + (snapshot ? 2 : 0)] as StreamFileNames;
}

/** True when row `row` of a trusted manifest's table records exactly the files listed (`files`), each with a known stamp. */
function vouches(table: ManifestTable, row: number, files: StreamFileNames): boolean {
  return files.journal === table.hasJournal(row) && files.snapshot === (table.snapshotMark(row) !== undefined) && table.stampsKnown(row);
}

/**
 * Refuses a store whose own directories are links or not directories: files are created and opened inside them by
 * name, and O_NOFOLLOW guards only the last part of a path, so a linked `streams/` would make writes land outside.
 */
async function refuseLinkedDirectories(fsl: FileSystem, layout: Layout): Promise<void> {
  for (const dir of [layout.streams, layout.blobs, layout.owners, layout.checkpoints, ...layout.blankDirs]) {
    let stats: Awaited<ReturnType<FileSystem['lstat']>>;
    try {
      stats = await fsl.lstat(dir);
    } catch (cause) {
      if (errorCode(cause) === 'ENOENT') continue;
      throw new StorageError(`@sessionfold/store-file: could not read ${dir}.`, { cause });
    }
    if (!stats.isDirectory()) {
      throw new StorageError(
        `@sessionfold/store-file: ${dir} is not a directory (a symbolic link or another kind of file); the store follows no link inside its directory. Nothing was changed.`,
      );
    }
  }
}

/** Creates `path` (0700) if missing; a failure names the directory. */
async function createDirectory(fsl: FileSystem, path: string): Promise<void> {
  try {
    await fsl.mkdir(path, 0o700);
  } catch (cause) {
    throw new StorageError(`@sessionfold/store-file: could not create ${path}.`, { cause });
  }
}

/** Native errors leave the store as `StorageError` (with the original as `cause`); the store's own pass through. */
function translate(error: unknown, what: string): unknown {
  if (error instanceof SessionfoldError) return error;
  return new StorageError(`@sessionfold/store-file: ${what}.`, { cause: error });
}
