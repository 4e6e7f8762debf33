import {
  ConcurrencyError,
  CorruptionError,
  InvalidInputError,
  revisionMatches,
  SessionfoldError,
  StorageError,
  type AppendResult,
  type ExpectedRevision,
  type NewEvent,
  type ObserverCall,
  type StoreObserver,
  type StreamId,
} from '@sessionfold/core/kernel';
import type { Blank, BlankJournals } from './blank-journals.js';
import { errorCode, readAll, readAllSync, syncDir, writeAll, writeAllSync, type FileSystem, type InlineCreateIo, type InlineIo } from './fs-layer.js';
import { fullDiskReason } from './fs-layer.js';
import { decodeLine, eventPayloadJson, frameLine } from './journal-codec.js';
import { CHECKPOINT_EVERY, emptyJournal, readEventIds, writableEventIds, type EventIdEntry, type JournalInfo } from './journal-scan.js';
import type { Layout } from './layout.js';
import type { ManifestTable } from './manifest-table.js';
import type { Positions } from './positions.js';
import { RECENT_BYTES, StreamFiles, type ChangeMark, type JournalHandle } from './stream-files.js';
import type { FileStamp } from './manifest-table.js';

export type { ChangeMark } from './stream-files.js';

/** What every stream shares with the store. */
export interface StoreContext {
  readonly fs: FileSystem;
  /** The synchronous write and fdatasync of `fs`, when it has them (see `#inlineIo`). */
  readonly inlineIo: InlineIo | undefined;
  /** Those and the synchronous open and close of `fs`, when it has them all: a journal is then created inline. */
  readonly inlineCreateIo: InlineCreateIo | undefined;
  /** How many streams have a flush loop running: a flush runs inline only when its stream's is the only one. */
  readonly flushLoops: { running: number };
  readonly layout: Layout;
  /** A writer's blank journals, which a new journal is renamed from when one is ready (none in a read-only view). */
  readonly blanks: BlankJournals | undefined;
  readonly positions: Positions;
  /** The clock's time as ISO 8601; throws a `StorageError` (before anything is reserved) when the clock fails. */
  now(): string;
  /** Throws a poisoned `StorageError` once the store refuses writes (a failed sync, damage found). */
  assertNotPoisoned(): void;
  /** The stream was deleted at some time (its tombstone is kept): `'never_existed'` refuses it. */
  wasDeleted(stream: StreamId): boolean;
  /** Marks the store as refusing writes until reopened, saying why. */
  poison(reason: string, cause: unknown): void;
  /** Damage found in what writes build on: reported, and the store refuses writes until reopened. */
  damaged(error: CorruptionError): void;
  /** Called on every flush, so the store can keep the number of open journal descriptors bounded. */
  touched(entry: StreamEntry): void;
  /** Told of each position a stream's change takes (the last of a flush), so feed reads from later on find the stream. */
  changing(entry: StreamEntry, position: number): void;
  /** The application's observer; `observing` is false when it has none, so flushes skip measuring. */
  readonly observe: ObserverCall<StoreObserver>;
  readonly observing: boolean;
}

/**
 * Largest flush run inline. Every flush writes synchronously (into the page cache); an inline one also waits
 * for its fdatasync on the event loop (as a synchronous SQLite commit does), and the more bytes, the longer.
 */
const INLINE_MAX_BYTES = 256 * 1024;
/** The longest torn tail a writer's first append cuts: longer ones are left for an open to judge. */
const TORN_TAIL_LIMIT = 64 * 1024 * 1024;
/** Flushes of several appends run inline after an asynchronous one during whose disk wait no append arrived. */
const INLINE_RUN = 15;

/**
 * Most UTF-16 code units of journal lines one flush holds, as bounded by `lineCharsBound` (one append may not
 * exceed it either): a flush joins its lines into one string, which must stay far below the engine's longest.
 */
export const MAX_FLUSH_CHARS = 256 * 1024 * 1024;

/**
 * A bound on what a line adds around an event's data, type and id (hash, stream name — at most 128 characters
 * that never need escaping —, revision, position, time, keys), so that a flush's size can be bounded before
 * its lines exist. Types and ids are counted six times over: JSON may escape each character as `\u00XX`.
 */
export function lineCharsBound(dataJson: string, type: string, eventId: string | undefined): number {
  return 400 + dataJson.length + 6 * (type.length + (eventId?.length ?? 0));
}

interface PendingAppend {
  events: readonly NewEvent[];
  dataJson: readonly string[];
  /** A bound on the length of the events' lines (`lineCharsBound`), in UTF-16 code units. */
  chars: number;
  firstRevision: number;
  result: AppendResult;
  /** `performance.now()` at the call, when the store has an observer (else 0). */
  startedAt: number;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

/** The durable state open found of a stream: `idsPending` when the journal's event ids were not read. */
export interface FoundFiles {
  journal: JournalInfo | undefined;
  snapshot: ChangeMark | undefined;
  idsPending: boolean;
}

/**
 * One stream's state and its journal writer. Appends queue and are written by group commit: a flush takes
 * everything queued, writes it with one write and one fdatasync, then answers every caller. Expected
 * revisions are checked against the head including queued appends, so a flush never holds a conflict; a
 * refusal that depends on queued appends waits for them to settle first (see `append`).
 * Compaction, deletion and restore run exclusively: they wait for queued appends and hold new ones back.
 */
export class StreamEntry {
  readonly name: StreamId;
  /** The stream's name as JSON, as every line written names it (made on the first write). */
  #nameJson: string | undefined;
  readonly #ctx: StoreContext;
  #revision = 0;
  /** Revision including queued appends: what the next append must expect. */
  #head = 0;
  #tombstone: ChangeMark | undefined;
  /** The current version of the stream's files (see `#files`); undefined while it is still only a row of `#table`. */
  #current: StreamFiles | undefined;
  /** The manifest's table whose row `#row` still describes the stream, until its files are first needed. */
  #table: ManifestTable | undefined;
  #row = -1;
  #journalExists = false;
  #fd: number | undefined;
  /** A failed write may have left bytes past `journal.length`; they are cut before the next write. */
  #dirty = false;
  /** The journal's size was found to be the length the store knows, when this writer first opened it to write. */
  #lengthChecked = false;
  /** The journal was created and its directory entry is not yet known to be durable. */
  #unsyncedName = false;
  #queue: PendingAppend[] = [];
  /** Flushes of several appends that may still run inline before one waits asynchronously again (see `#inlineIo`). */
  #inlineCredit = 0;
  #flushing: Promise<void> | undefined;
  #exclusive: Promise<void> | undefined;
  /** Counts exclusive operations begun and ended: odd while one runs (its files may be changing). */
  #generation = 0;
  /** Made on the first append with event ids: most streams never need it. */
  #pendingIds: Map<string, Promise<AppendResult>> | undefined;
  /** The journal's event ids are not known yet (opened from a manifest): read before an append needs them. */
  #idsPending = false;
  /** Reading them; every append waits for it, so appends keep the order they came in. */
  #idsLoad: Promise<void> | undefined;

  /** `found`: the durable state open found (see `load`), so a stream opened with files is built once. */
  constructor(ctx: StoreContext, name: StreamId, found?: FoundFiles) {
    this.#ctx = ctx;
    this.name = name;
    if (found !== undefined) this.#current = this.#found(found);
  }

  /**
   * A stream whose files are as row `row` of `table` records them (taken as recorded at open): its files'
   * description is made from the row when first needed, so opening many streams builds little for each.
   */
  static recorded(ctx: StoreContext, name: StreamId, table: ManifestTable, row: number): StreamEntry {
    const entry = new StreamEntry(ctx, name);
    entry.#table = table;
    entry.#row = row;
    entry.#journalExists = table.hasJournal(row);
    entry.#idsPending = entry.#journalExists;
    entry.#revision = table.revision(row);
    entry.#head = entry.#revision;
    return entry;
  }

  /** The current version of the stream's files; replaced (never changed) by compaction and deletion. */
  get #files(): StreamFiles {
    return (this.#current ??= this.#fromTable());
  }

  set #files(files: StreamFiles) {
    this.#current = files;
    this.#table = undefined;
  }

  /** The files as the table's row records them; from now on the stream is no longer only that row. */
  #fromTable(): StreamFiles {
    const table = this.#table;
    this.#table = undefined;
    if (!table) return new StreamFiles(undefined, emptyJournal(0));
    const row = this.#row;
    const snapshot = table.snapshotMark(row);
    const journal = table.hasJournal(row) ? table.journalInfo(row, table.journalStamp(row).ino) : emptyJournal(snapshot?.revision ?? 0);
    return new StreamFiles(snapshot && { ...snapshot }, journal);
  }

  /** The table and row that still describe the stream as open took it, when nothing has looked at its files since. */
  get recorded(): { table: ManifestTable; row: number } | undefined {
    return this.#table && { table: this.#table, row: this.#row };
  }

  /** Last durable revision (0: the stream does not exist). */
  get revision(): number {
    return this.#revision;
  }

  /** The mark of the stream's last deletion, if it was ever deleted. */
  get tombstone(): ChangeMark | undefined {
    return this.#tombstone;
  }

  /** Whether the stream's journal file exists (the current version may describe an empty journal without one). */
  get journalExists(): boolean {
    return this.#journalExists;
  }

  get files(): StreamFiles {
    return this.#files;
  }

  get snapshot(): ChangeMark | undefined {
    return this.#files.snapshot;
  }

  get journal(): JournalInfo {
    return this.#files.journal;
  }

  /**
   * Makes `files` current, once what it describes is in place. A version made by a change at a new position
   * comes with the one it replaces as its `before` (pinned), kept until `dropHeldVersions` lets it go.
   */
  useFiles(files: StreamFiles, journalExists = this.#journalExists): void {
    this.#files = files;
    this.#journalExists = journalExists;
  }

  /**
   * Lets go of the versions held for feed reads once the change that replaced them is at or below `watermark`:
   * every later feed read shows that change.
   */
  dropHeldVersions(watermark: number): void {
    // A stream still as the manifest recorded it holds no versions.
    for (let at: StreamFiles | undefined = this.#current; at; at = at.before) {
      if (at.before && at.since <= watermark) releaseChain(at.dropHeld());
    }
  }

  /** The version a feed read up to `upTo` shows: the newest one whose change is at or below it. */
  filesAsOf(upTo: number): StreamFiles {
    let files = this.#files;
    while (files.since > upTo && files.before) files = files.before;
    return files;
  }

  /**
   * Sets the durable state found at open (or, in a read-only view, found again after the writer replaced
   * files); `idsPending` when the journal's event ids were not read, so they are read before the first append
   * that carries one.
   */
  load(journal: JournalInfo | undefined, snapshot: ChangeMark | undefined, idsPending = false): void {
    this.#files = this.#found({ journal, snapshot, idsPending });
  }

  /** Sets the state `found` describes but the files; returns the version of the files it describes. */
  #found({ journal, snapshot, idsPending }: FoundFiles): StreamFiles {
    this.#idsPending = idsPending && journal !== undefined;
    this.#journalExists = journal !== undefined;
    const files = new StreamFiles(snapshot, journal ?? emptyJournal(snapshot?.revision ?? 0));
    this.#revision = Math.max(files.journal.lastRevision, snapshot?.revision ?? 0);
    this.#head = this.#revision;
    return files;
  }

  /** Queues a validated batch whose lines take at most `chars` code units (≤ `MAX_FLUSH_CHARS`); resolves once it is durable. */
  append(events: readonly NewEvent[], dataJson: readonly string[], chars: number, expected: ExpectedRevision): Promise<AppendResult> {
    if (this.#idsLoad || (this.#idsPending && events.some((event) => event.eventId !== undefined))) {
      return this.#withIds().then(() => this.append(events, dataJson, chars, expected));
    }
    if (this.#exclusive) return this.#exclusive.then(() => this.append(events, dataJson, chars, expected));
    try {
      this.#ctx.assertNotPoisoned();
      const firstId = (events[0] as NewEvent).eventId;
      if (firstId !== undefined) {
        const committed = this.journal.eventIds.get(firstId);
        if (committed) return Promise.resolve({ ...committed.result });
        const pending = this.#pendingIds?.get(firstId);
        if (pending) return pending.then((result) => ({ ...result }));
      }
      for (let index = 1; index < events.length; index++) {
        const eventId = (events[index] as NewEvent).eventId;
        if (eventId === undefined) continue;
        if (this.journal.eventIds.has(eventId) || this.#pendingIds?.has(eventId)) {
          throw new InvalidInputError(`events[${index}].eventId`, `${JSON.stringify(eventId)} is already in stream ${this.name}`);
        }
      }
      if (!revisionMatches(expected, this.#head, expected === 'never_existed' && this.#ctx.wasDeleted(this.name))) {
        // A refusal that counts queued appends waits for them: it must name a revision a read can already see,
        // and if they fail the append may well be accepted.
        if (this.#head !== this.#revision && this.#flushing) {
          const settled = this.#flushing;
          return settled.then(() => this.append(events, dataJson, chars, expected));
        }
        throw new ConcurrencyError(this.name, expected, this.#head);
      }
    } catch (error) {
      return Promise.reject(error);
    }
    let resolve!: (result: AppendResult) => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<AppendResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const pending: PendingAppend = {
      events,
      dataJson,
      chars,
      firstRevision: this.#head + 1,
      result: { revision: this.#head + events.length, position: 0 },
      startedAt: this.#ctx.observing ? performance.now() : 0,
      resolve,
      reject,
    };
    this.#head += events.length;
    // A retry must not see what the first caller does with its result object, so retries wait on a copy taken
    // before any caller's continuation runs (this callback is registered first). Only batches with ids pay.
    let forRetries: Promise<AppendResult> | undefined;
    // Indexed loops on the per-event paths: until the code is optimized, an array iterator costs per element.
    for (let i = 0; i < events.length; i++) {
      const eventId = (events[i] as NewEvent).eventId;
      if (eventId === undefined) continue;
      if (!forRetries) {
        forRetries = promise.then((result) => ({ ...result }));
        forRetries.catch(() => undefined); // the first caller reports the failure; retries see it too
      }
      (this.#pendingIds ??= new Map()).set(eventId, forRetries);
    }
    this.#queue.push(pending);
    this.#flushing ??= this.#flushLoop();
    return promise;
  }

  /** Runs `task` with no append queued or in flight and none admitted until it ends. */
  async exclusive<T>(task: () => Promise<T>): Promise<T> {
    while (this.#exclusive) await this.#exclusive;
    let done!: () => void;
    this.#exclusive = new Promise<void>((resolve) => (done = resolve));
    this.#generation++;
    try {
      if (this.#flushing) await this.#flushing;
      return await task();
    } finally {
      this.#generation++;
      this.#exclusive = undefined;
      done();
    }
  }

  /**
   * The stamps the last manifest capture found for this stream's files, with what the stream was then: its
   * generation, journal length and snapshot mark. While all three are the same, the files are the same (under the
   * writer lock only this writer changes them: appends make the journal longer, and every replacement moves the
   * generation), so a periodic capture takes these stamps instead of looking again. The capture at close looks
   * at every file it records: the clean-close mark it vouches for lets the next open trust the stamps unseen.
   */
  stamped:
    | { generation: number; length: number; snapshot: ChangeMark | undefined; stamps: { snapshot: FileStamp | undefined; journal: FileStamp | undefined } }
    | undefined;

  /**
   * Changes each time an exclusive operation (compaction, deletion, restore: the only ones that replace or
   * remove files) begins or ends; odd while one runs. Equal before and after a look at the files, and even,
   * means the files looked at are the ones the stream's state describes (appends only make the journal longer).
   */
  get generation(): number {
    return this.#generation;
  }

  /** Reads the journal's event ids once, before any append goes on. */
  #withIds(): Promise<void> {
    this.#idsLoad ??= this.exclusive(async () => {
      if (!this.#idsPending) return;
      const journal = this.journal;
      let ids: Map<string, EventIdEntry>;
      try {
        ids = await readEventIds(this.#ctx.fs, this.#ctx.layout.journal(this.name), journal);
      } catch (error) {
        if (error instanceof CorruptionError) this.#ctx.damaged(error);
        else if (!(error instanceof SessionfoldError)) throw new StorageError(`Could not read ${this.#ctx.layout.journal(this.name)}.`, { cause: error });
        throw error;
      }
      const own = writableEventIds(journal);
      for (const [id, where] of ids) own.set(id, where);
      this.#idsPending = false;
    }).finally(() => {
      this.#idsLoad = undefined;
    });
    return this.#idsLoad;
  }

  /** True when nothing is queued, flushing or running exclusively: its descriptor may be closed. */
  get idle(): boolean {
    return this.#flushing === undefined && this.#exclusive === undefined && this.#queue.length === 0;
  }

  /** True when a failed write may have left bytes past the journal's length (cut before the next write). */
  get dirty(): boolean {
    return this.#dirty;
  }

  /** True while the current version holds an older one for feed reads (see `dropHeldVersions`). */
  get holdsVersions(): boolean {
    return this.#current?.before !== undefined;
  }

  /** The position of the stream's latest change that open found or that was made since (0: none). */
  get lastChangePosition(): number {
    if (this.#table) return Math.max(this.#tombstone?.position ?? 0, this.#table.lastChangePosition(this.#row));
    const { snapshot, journal, since } = this.#files;
    return Math.max(this.#tombstone?.position ?? 0, snapshot?.position ?? 0, journal.maxPosition, journal.lastPosition, since);
  }

  /** True while the journal has a write descriptor open. */
  get hasOpenFile(): boolean {
    return this.#fd !== undefined;
  }

  /** Waits for queued appends to settle. */
  async drain(): Promise<void> {
    while (this.#flushing) await this.#flushing;
  }

  /**
   * The journal's bytes `[offset, end)` of `files`, read at once with the synchronous call on the write
   * descriptor, for `offset` where one of the writes `files` counts as recent began (`StreamFiles.recentStart`),
   * while `files` is the current version: no file is opened and nothing waits on the thread pool. Undefined
   * otherwise, or when the read fails (the caller then reads as usual and reports what fails).
   */
  readRecent(files: StreamFiles, offset: number, end: number): JournalHandle | undefined {
    const { fs } = this.#ctx;
    const fd = this.#fd;
    // Recent writes span at most `RECENT_BYTES` up to the journal's end; the bound only guards that promise.
    if (fd === undefined || !fs.readSync || files !== this.#files || end - offset > RECENT_BYTES) return undefined;
    const bytes = Buffer.allocUnsafe(end - offset);
    let got: number;
    try {
      got = readAllSync(fs as Required<Pick<FileSystem, 'readSync'>>, fd, bytes, offset);
    } catch {
      return undefined;
    }
    return { fd: -1, done: () => undefined, recent: { offset, bytes: got === bytes.length ? bytes : bytes.subarray(0, got) } };
  }

  /** Closes the journal's write descriptor (before its file is replaced or removed, and at close). */
  async closeFile(): Promise<void> {
    const fd = this.#fd;
    this.#fd = undefined;
    // Not `#files`: that would build a stream still only a manifest row into files, which close must not do.
    this.#current?.forgetRecent();
    if (fd === undefined) return;
    // Closing a journal with nothing in flight takes the kernel a microsecond or two; handing it to the thread
    // pool costs the event loop several times that, once per stream the descriptor cache lets go of.
    const io = this.#ctx.inlineCreateIo;
    if (io) {
      try {
        io.closeSync(fd);
      } catch {
        // As below: a descriptor that will not close is lost either way.
      }
      return;
    }
    await this.#ctx.fs.close(fd).catch(() => undefined);
  }

  /**
   * The stream is gone: forget its journal and snapshot, keep the tombstone. `retired` is the version the
   * deletion retired; its pin passes to the new version, which holds it as `before`.
   */
  reset(tombstone: ChangeMark | undefined, retired?: StreamFiles): void {
    this.#tombstone = tombstone;
    this.#idsPending = false;
    this.#files = new StreamFiles(undefined, emptyJournal(0), retired ? (tombstone?.position ?? 0) : 0, retired);
    this.#journalExists = false;
    this.#revision = 0;
    this.#head = 0;
    this.#dirty = false;
  }

  /** Sets the revision after a restore or compaction changed it outside of appends. */
  setRevision(revision: number): void {
    this.#revision = revision;
    this.#head = revision;
  }

  /** Records the deletion found at open whose files were already gone: the stream stays as it is. */
  setTombstone(tombstone: ChangeMark): void {
    this.#tombstone = tombstone;
  }

  async #flushLoop(): Promise<void> {
    // Counted before the first await, so streams whose appends arrived in the same tick see each other.
    this.#ctx.flushLoops.running++;
    try {
      while (this.#queue.length > 0) {
        // Yield once to the event loop before taking the batch: callers answered by the previous flush append
        // again from their continuations, and those should ride this flush rather than straggle into the next.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const batch = this.#takeBatch();
        try {
          await this.#flush(batch);
        } catch (error) {
          // #flush answers its callers itself; this only keeps an unforeseen error from escaping unanswered.
          this.#fail(batch, error);
        }
      }
    } finally {
      this.#ctx.flushLoops.running--;
      this.#flushing = undefined;
    }
  }

  /** The queued appends one flush writes: all of them, unless together they exceed `MAX_FLUSH_CHARS`. */
  #takeBatch(): PendingAppend[] {
    const queue = this.#queue;
    let chars = 0;
    let take = 0;
    while (take < queue.length && (take === 0 || chars + (queue[take] as PendingAppend).chars <= MAX_FLUSH_CHARS)) {
      chars += (queue[take] as PendingAppend).chars;
      take++;
    }
    if (take === queue.length) {
      this.#queue = [];
      return queue;
    }
    this.#queue = queue.slice(take);
    return queue.slice(0, take);
  }

  async #flush(batch: PendingAppend[]): Promise<void> {
    const { positions } = this.#ctx;
    let framed: { start: number; lines: string[]; bytes: Buffer };
    try {
      framed = this.#frame(batch);
    } catch (error) {
      // Nothing was written and #frame released its positions: the stream is as it was before these appends.
      this.#fail(batch, error);
      return;
    }
    const { start, lines, bytes } = framed;
    let syncMs: number;
    try {
      syncMs = await this.#persist(bytes, this.#inlineIo(batch, bytes));
    } catch (error) {
      positions.settle(start);
      this.#fail(batch, error);
      return;
    }
    const written = { offset: this.journal.length, line: this.journal.lines + 1, revision: (batch[0] as PendingAppend).firstRevision, position: start };
    this.#committed(batch, lines, bytes.length);
    this.#files.wrote(written, bytes.length);
    positions.settle(start);
    if (this.#ctx.observing) this.#observeFlush(batch, lines, bytes.length, syncMs);
    // Each result is a fresh object made by #frame and kept nowhere else, so callers get it as is.
    for (let b = 0; b < batch.length; b++) {
      const pending = batch[b] as PendingAppend;
      pending.resolve(pending.result);
    }
  }

  /**
   * Reserves the batch's positions and frames its lines; sets each append's result. The clock is read first,
   * and whatever fails after the reservation settles it again, so a failed flush never holds the feed back.
   */
  #frame(batch: PendingAppend[]): { start: number; lines: string[]; bytes: Buffer } {
    // One timestamp per flush: every event of a flush becomes durable at the same moment.
    const recordedAtJson = JSON.stringify(this.#ctx.now());
    let count = 0;
    for (let b = 0; b < batch.length; b++) count += (batch[b] as PendingAppend).events.length;
    const start = this.#ctx.positions.reserve(count);
    this.#ctx.changing(this, start + count - 1);
    try {
      return this.#frameLines(batch, start, count, recordedAtJson);
    } catch (error) {
      this.#ctx.positions.release(start);
      throw error;
    }
  }

  #frameLines(batch: PendingAppend[], start: number, count: number, recordedAtJson: string): { start: number; lines: string[]; bytes: Buffer } {
    const lines = new Array<string>(count);
    // Batches are nearly always of one event type: remembering the last one serializes it once per flush.
    let lastType: string | undefined;
    let typeJson = '';
    let position = start;
    let index = 0;
    for (let b = 0; b < batch.length; b++) {
      const pending = batch[b] as PendingAppend;
      const { events, dataJson, firstRevision } = pending;
      const last = events.length - 1;
      for (let i = 0; i <= last; i++) {
        const event = events[i] as NewEvent;
        if (event.type !== lastType) {
          lastType = event.type;
          typeJson = JSON.stringify(lastType);
        }
        lines[index++] = frameLine(
          eventPayloadJson(
            (this.#nameJson ??= JSON.stringify(this.name)),
            firstRevision + i,
            position++,
            recordedAtJson,
            typeJson,
            event.eventId,
            i < last,
            dataJson[i] as string,
            event.schemaVersion,
          ),
        );
      }
      pending.result = { revision: firstRevision + last, position: position - 1 };
    }
    return { start, lines, bytes: Buffer.from(lines.join('')) };
  }

  /**
   * The synchronous calls to flush this batch with, or undefined to flush it asynchronously. Waiting for the
   * disk asynchronously only pays when something can run meanwhile; the thread-pool round trip itself costs
   * ≈ 0.05–0.1 ms. So a flush runs inline when no other stream is flushing and either
   * - it is a lone append: its caller waits on it alone, and appends made meanwhile still form the next flush; or
   * - the last asynchronous flush of this stream saw no append arrive while it waited (callers that append
   *   again only once answered); every `INLINE_RUN` such flushes, one waits asynchronously again to re-check.
   * Appends made while a flush runs inline queue as always and form the next flush. A journal not yet created
   * is a blank renamed into place when one is ready, then flushed inline like any other; else it is opened and
   * written inline, then waits once on its fdatasync and its directory's fsync together. Anything unusual (a journal to reopen
   * or cut back first, a large record) takes the asynchronous path.
   */
  #inlineIo(batch: PendingAppend[], bytes: Buffer): InlineIo | undefined {
    const io = this.#ctx.inlineIo;
    if (!io || this.#ctx.flushLoops.running !== 1) return undefined;
    if (this.#dirty || this.#unsyncedName || bytes.length > INLINE_MAX_BYTES) return undefined;
    if (this.#fd === undefined && (this.#journalExists || !this.#ctx.inlineCreateIo)) return undefined;
    if (batch.length === 1) return io;
    if (this.#inlineCredit === 0) return undefined;
    this.#inlineCredit--;
    return io;
  }

  /**
   * Writes `bytes` at the end of the journal and fdatasyncs it, with `io`'s synchronous calls when given (the
   * whole success path then runs without yielding). Every failure is handled alike on both paths: a failed
   * write is cut back and rejects with `StorageError`; a failed fdatasync poisons the store.
   */
  async #persist(bytes: Buffer, inline: InlineIo | undefined): Promise<number> {
    const { layout } = this.#ctx;
    let io = inline;
    try {
      this.#ctx.assertNotPoisoned();
      // Without its directory the journal is created asynchronously, which makes the directory first.
      if (io && this.#fd === undefined && !this.#createInline()) io = undefined;
      if (io) this.#writeInline(io, bytes);
      else await this.#write(bytes);
    } catch (cause) {
      if (cause instanceof SessionfoldError) throw cause;
      await this.#cutBack();
      throw new StorageError(`Could not write to ${layout.journal(this.name)}${fullDiskReason(cause)}.`, { cause });
    }
    const syncStart = this.#ctx.observing ? performance.now() : 0;
    try {
      if (io && this.#unsyncedName) await this.#syncCreated();
      else if (io) io.fdatasyncSync(this.#fd as number);
      else await this.#sync();
      return this.#ctx.observing ? performance.now() - syncStart : 0;
    } catch (cause) {
      // After a failed fdatasync the kernel may have dropped the dirty pages: a later fsync that succeeds
      // would prove nothing, so nothing more is written until the store is reopened and the tail re-read.
      this.#dirty = true;
      this.#ctx.poison(`a write to ${layout.journal(this.name)} failed to sync`, cause);
      throw new StorageError(`Could not sync ${layout.journal(this.name)}; the store refuses writes until it is reopened.`, {
        cause,
        poisoned: true,
      });
    }
  }

  /** Tells the observer of a durable flush and of each append it made durable. */
  #observeFlush(batch: PendingAppend[], lines: string[], bytes: number, syncMs: number): void {
    const { observe } = this.#ctx;
    observe('flushed', { appends: batch.length, events: lines.length, bytes, syncMs });
    const now = performance.now();
    let line = 0;
    for (const pending of batch) {
      let appendBytes = 0;
      for (let i = 0; i < pending.events.length; i++) appendBytes += Buffer.byteLength(lines[line++] as string);
      observe('appendCommitted', { stream: this.name, events: pending.events.length, bytes: appendBytes, durationMs: now - pending.startedAt });
    }
  }

  /**
   * Creates the journal (0600) with the synchronous call (`#inlineIo` checked it is there); false, with nothing
   * created, when the streams directory does not exist yet.
   */
  #createInline(): boolean {
    const io = this.#ctx.inlineCreateIo as InlineCreateIo;
    const path = this.#ctx.layout.journal(this.name);
    const renameSync = io.renameSync;
    const blank = renameSync ? this.#ctx.blanks?.take() : undefined;
    if (renameSync && blank) {
      try {
        renameSync.call(io, blank.path, path);
      } catch (error) {
        this.#ctx.blanks?.giveBack(blank);
        if (errorCode(error) === 'ENOENT') return false;
        throw error;
      }
      this.#tookBlank(blank);
      return true;
    }
    try {
      this.#fd = io.openSync(path, 'wx+', 0o600);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return false;
      throw error;
    }
    this.#journalExists = true;
    this.#unsyncedName = true;
    return true;
  }

  /**
   * A blank renamed into place is this stream's journal: its own entry is durable already, and the rename needs
   * no fsync before the append is acknowledged (a crash that loses it is undone at the next open, see `BlankJournals`).
   */
  #tookBlank(blank: Blank): void {
    this.#fd = blank.fd;
    this.#journalExists = true;
    this.#unsyncedName = false;
    this.#ctx.blanks?.renamed();
  }

  /**
   * fdatasyncs a journal just created inline and fsyncs its directory, both waited on together (on a busy disk
   * two waits in a row cost twice); the directory is opened and closed with the synchronous calls, which do
   * not wait on the disk.
   */
  async #syncCreated(): Promise<void> {
    const { fs, layout } = this.#ctx;
    const io = this.#ctx.inlineCreateIo as InlineCreateIo;
    if (process.platform === 'win32') {
      await fs.fdatasync(this.#fd as number);
    } else {
      const dir = io.openSync(layout.streams, 'r');
      try {
        await Promise.all([fs.fdatasync(this.#fd as number), fs.fsync(dir)]);
      } finally {
        io.closeSync(dir);
      }
    }
    this.#unsyncedName = false;
  }

  /** Writes with the synchronous call to the open, clean journal (`#inlineIo` checked both). */
  #writeInline(io: InlineIo, bytes: Buffer): void {
    this.#ctx.touched(this);
    writeAllSync(io, this.#fd as number, bytes, this.journal.length);
  }

  /** Opens the journal if needed, cuts back what a failed write left, then writes. */
  async #write(bytes: Buffer): Promise<void> {
    const { fs } = this.#ctx;
    await this.#openForWrite();
    this.#ctx.touched(this);
    const fd = this.#fd as number;
    if (this.#dirty) {
      await fs.ftruncate(fd, this.journal.length);
      this.#dirty = false;
    }
    await writeAll(fs, fd, bytes, this.journal.length);
  }

  /** fdatasyncs the journal and, for a new journal, its directory entry. */
  async #sync(): Promise<void> {
    const { fs, layout } = this.#ctx;
    if (this.#unsyncedName) {
      // A new journal's name must be durable too, or the fsynced bytes could vanish with it. Neither sync needs
      // the other done first (the append is acknowledged only once both are), so they wait on the disk together.
      await Promise.all([fs.fdatasync(this.#fd as number), syncDir(fs, layout.streams)]);
      this.#unsyncedName = false;
    } else {
      await fs.fdatasync(this.#fd as number);
    }
    this.#inlineCredit = this.#queue.length === 0 ? INLINE_RUN : 0;
  }

  /** Why the journal's last line is not the record the store knows ends it (checksum, JSON, revision), or undefined. */
  async #lastLineDamage(fd: number): Promise<string | undefined> {
    const end = this.journal.length;
    for (let want = Math.min(end, 64 * 1024); ; want = Math.min(end, want * 4)) {
      const bytes = Buffer.alloc(want);
      if ((await readAll(this.#ctx.fs, fd, bytes, end - want)) < want) return 'the journal ends before its known length';
      if (bytes[want - 1] !== 0x0a) return 'the last line does not end with a newline';
      const start = bytes.lastIndexOf(0x0a, want - 2) + 1;
      if (start === 0 && want < end) continue;
      const decoded = decodeLine(bytes, start, want - 1);
      if ('reason' in decoded) return decoded.reason;
      const revision = (decoded.value as { revision?: unknown } | null)?.revision;
      if (revision !== this.journal.lastRevision) return `the last line holds revision ${String(revision)} where the store knows ${this.journal.lastRevision}`;
      return undefined;
    }
  }

  /**
   * Cuts the journal back to its known length when what lies past it (`size` in all) holds no newline, so no
   * record (a torn write that was never acknowledged), and makes the cut durable; false when it holds one.
   */
  async #tornTailCut(fd: number, size: number): Promise<boolean> {
    const extra = size - this.journal.length;
    if (extra > TORN_TAIL_LIMIT) return false;
    const bytes = Buffer.alloc(extra);
    if ((await readAll(this.#ctx.fs, fd, bytes, this.journal.length)) < extra || bytes.includes(0x0a)) return false;
    await this.#ctx.fs.ftruncate(fd, this.journal.length);
    await this.#ctx.fs.fdatasync(fd);
    return true;
  }

  /** Opens (or creates, 0600) the journal for writing. */
  async #openForWrite(): Promise<void> {
    if (this.#fd !== undefined) return;
    const path = this.#ctx.layout.journal(this.name);
    if (this.#journalExists) {
      const fd = await this.#ctx.fs.open(path, 'r+');
      if (this.#lengthChecked) {
        this.#fd = fd;
        return;
      }
      // Writes go at the known length: a journal of another length (changed while the store was closed, which
      // an open after a clean close does not look for) is not written over. Once is enough: from then on only
      // this writer changes it.
      const { size } = await this.#ctx.fs.fstat(fd).catch(async (error: unknown) => {
        await this.#ctx.fs.close(fd).catch(() => undefined);
        throw error;
      });
      // Bytes past the known length with no newline are a write cut short after the store closed: cut, as open would.
      const torn = size > this.journal.length && !this.#dirty && (await this.#tornTailCut(fd, size).catch(() => false));
      if (size !== this.journal.length && !this.#dirty && !torn) {
        await this.#ctx.fs.close(fd).catch(() => undefined);
        const error = new CorruptionError(
          path,
          undefined,
          `the journal is ${size} bytes long where the store knows ${this.journal.length}; it changed under the store`,
        );
        this.#ctx.damaged(error);
        throw error;
      }
      // Nor is a journal whose last line was changed in place (same length): the next open would stop there.
      const changed =
        size === this.journal.length && this.journal.lines > 0 ? await this.#lastLineDamage(fd).catch((error: unknown) => String(error)) : undefined;
      if (changed !== undefined) {
        await this.#ctx.fs.close(fd).catch(() => undefined);
        const error = new CorruptionError(path, this.journal.lines, `${changed}; the journal changed under the store`);
        this.#ctx.damaged(error);
        throw error;
      }
      this.#lengthChecked = true;
      this.#fd = fd;
      return;
    }
    const blank = this.#ctx.blanks?.take();
    if (blank) {
      try {
        await this.#ctx.fs.rename(blank.path, path);
        this.#tookBlank(blank);
        return;
      } catch {
        // Created as before below (which makes the streams directory if it is missing, and reports what fails).
        this.#ctx.blanks?.giveBack(blank);
      }
    }
    try {
      this.#fd = await this.#ctx.fs.open(path, 'wx+', 0o600);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
      await this.#ctx.fs.mkdir(this.#ctx.layout.streams, 0o700);
      this.#fd = await this.#ctx.fs.open(path, 'wx+', 0o600);
    }
    this.#journalExists = true;
    this.#unsyncedName = true;
  }

  /** Cuts a half-written record back off now; if that fails too, it is retried before the next write. */
  async #cutBack(): Promise<void> {
    this.#dirty = true;
    if (this.#fd === undefined) return;
    try {
      await this.#ctx.fs.ftruncate(this.#fd, this.journal.length);
      this.#dirty = false;
    } catch {
      // Left dirty on purpose: the next flush truncates before writing.
    }
  }

  /** Fails a flush and every append queued behind it: their revisions assumed this flush would land. */
  #fail(batch: PendingAppend[], error: unknown): void {
    const failed = [...batch, ...this.#queue];
    this.#queue = [];
    this.#head = this.#revision;
    for (const pending of failed) {
      for (const event of pending.events) if (event.eventId !== undefined) this.#pendingIds?.delete(event.eventId);
      pending.reject(error);
    }
  }

  #committed(batch: PendingAppend[], lines: string[], byteCount: number): void {
    const journal = this.journal;
    // Byte offsets are only needed where a checkpoint or the first live line falls, so lines are measured
    // lazily, up to those points: most flushes measure nothing.
    let measured = 0;
    let measuredOffset = journal.length;
    const offsetOf = (index: number): number => {
      for (; measured < index; measured++) measuredOffset += Buffer.byteLength(lines[measured] as string);
      return measuredOffset;
    };
    let lineNo = journal.lines;
    let index = 0;
    for (let b = 0; b < batch.length; b++) {
      const pending = batch[b] as PendingAppend;
      const n = pending.events.length;
      for (let i = 0; i < n; i++, index++) {
        const event = pending.events[i] as NewEvent;
        lineNo++;
        const revision = pending.firstRevision + i;
        const position = pending.result.position - (n - 1 - i);
        if (journal.firstPosition === 0) {
          journal.firstPosition = position;
          journal.liveOffset = offsetOf(index);
          journal.liveLine = lineNo;
        }
        if (journal.checkpoints.length === 0 || revision % CHECKPOINT_EVERY === 0) {
          journal.checkpoints.push({ revision, position, offset: offsetOf(index), line: lineNo });
        }
        if (event.eventId !== undefined) {
          writableEventIds(journal).set(event.eventId, { result: { ...pending.result }, revision });
          this.#pendingIds?.delete(event.eventId);
        }
      }
      journal.lastPosition = pending.result.position;
      this.#revision = pending.result.revision;
    }
    journal.length += byteCount;
    journal.lines = lineNo;
    journal.lastHash = (lines[lines.length - 1] as string).slice(0, 64);
    journal.lastRevision = this.#revision;
    journal.maxPosition = journal.lastPosition;
  }
}

/** Releases a version held as `before` and every older one it holds. */
function releaseChain(files: StreamFiles | undefined): void {
  for (let at = files; at; ) {
    const next = at.dropHeld();
    at.release();
    at = next;
  }
}
