import {
  CorruptionError,
  DELETED_RECORD,
  SNAPSHOT_RECORD,
  StorageError,
  type JsonValue,
  type RecordedEvent,
  type Snapshot,
  type StreamId,
  type StreamRead,
} from '@sessionfold/core/kernel';
import { ChangeIndex } from './change-index.js';
import { mergeByPosition, type FeedSource } from './feed.js';
import { errorCode, unreadable, type FileSystem } from './fs-layer.js';
import { journalEvents, startPoint, type EventForm, type EventWindow, type JournalEvents, type StartPoint } from './journal-events.js';
import type { JournalInfo } from './journal-scan.js';
import type { Layout } from './layout.js';
import type { Positions } from './positions.js';
import { scanJournal } from './journal-scan.js';
import { readSnapshotFile } from './snapshot-file.js';
import type { ChangeMark, StreamEntry } from './stream-entry.js';
import type { JournalHandle, RecentBytes, StreamFiles } from './stream-files.js';

const EMPTY: AsyncIterable<never> = { [Symbol.asyncIterator]: async function* () {} };

/** A stream read whose events are in the form `T` (see `EventForm`). */
export type FormRead<T> = Omit<StreamRead, 'events'> & { events: AsyncIterable<T> };

/** What the read side needs from the store. */
export interface ReaderContext {
  readonly fs: FileSystem;
  readonly layout: Layout;
  readonly readOnly: boolean;
  readonly entries: ReadonlyMap<StreamId, StreamEntry>;
  /** The stream's entry, made (empty) when the store has none: a view reading a stream the writer made since its open. */
  entryFor(stream: StreamId): StreamEntry;
  positions(): Positions;
  /** Told of damage a read found in a journal or snapshot: what writes build on. */
  corrupted(error: CorruptionError): void;
}

/** A read-only view looks again this many times when the writer keeps replacing a stream's files under it. */
const VIEW_RETRIES = 10;

/**
 * The read side of the store: one stream's snapshot and events, and the change feed merged by position.
 * Every read pins the version of the stream's files it starts with (`StreamFiles`) and reads only that
 * version, so a compaction or delete running meanwhile shows as before or after, never a mix. A read-only
 * view, whose writer is another process, instead checks that the files are still the ones it knows and, when
 * they were replaced, reads the stream's files again until it finds a consistent pair.
 */
export class StoreReader {
  readonly #ctx: ReaderContext;
  /** Closers of readers (event iterators, feeds) not yet finished, for `closeAll`. */
  readonly #open = new Set<() => void>();
  /**
   * Streams a read-only view read again after the writer replaced their files: their changes since the view
   * opened lie above its watermark, so its feed cannot show them whole and asks for a reopen instead.
   */
  readonly #reloaded = new Set<StreamId>();
  /** Streams by their latest change, so a feed read visits only those changed at or after where it starts. */
  readonly #changes = new ChangeIndex<StreamEntry>();
  /** Streams whose change replaced their files: they may hold the old version for feed reads until one lets it go. */
  readonly #holding = new Set<StreamEntry>();

  constructor(ctx: ReaderContext) {
    this.#ctx = ctx;
  }

  /** Takes every stream as open found it, each changed last at the latest position its files or tombstone hold. */
  seed(): void {
    const entries = [...this.#ctx.entries.values()];
    this.#changes.seed(
      entries,
      entries.map((entry) => entry.lastChangePosition),
    );
  }

  /** A change of `entry` takes `position`: positions are handed out in rising order. */
  changing(entry: StreamEntry, position: number): void {
    this.#changes.note(entry, position);
  }

  /**
   * After a change that made a new version of `entry`'s files (a snapshot or a delete): lets go of the versions
   * held for feed reads that the watermark has passed, and remembers the stream while it still holds one, so
   * that feed reads let go of it later even when they have nothing of the stream to show.
   */
  letGoOfHeld(entry: StreamEntry): void {
    entry.dropHeldVersions(this.#ctx.positions().watermark);
    if (entry.holdsVersions) this.#holding.add(entry);
  }

  /** The stream as it is now: revision, the snapshot if it covers `from`, then the events after it. */
  async read<T>(stream: StreamId, from: number, form: EventForm<T>): Promise<FormRead<T>> {
    try {
      return await this.#read(stream, from, form);
    } catch (error) {
      if (error instanceof CorruptionError) this.#ctx.corrupted(error);
      throw error;
    }
  }

  async #read<T>(stream: StreamId, from: number, form: EventForm<T>): Promise<FormRead<T>> {
    const { fs, layout, readOnly } = this.#ctx;
    let entry = this.#ctx.entries.get(stream);
    let grownReloaded = false;
    for (let attempt = 0; ; attempt++) {
      if (!entry || entry.revision === 0) {
        // A view reads a stream the writer made (or wrote again) since the view opened, once it is on disk.
        if (!readOnly || attempt > 0 || !(await this.#onDisk(stream))) return { revision: 0, events: EMPTY };
        entry = this.#ctx.entryFor(stream);
        await this.#reload(entry, false);
        continue;
      }
      const files = entry.files;
      // Taken together, before any await: appends that land meanwhile are past both.
      const revision = entry.revision;
      const length = files.journal.length;
      files.pin();
      let handedOver = false;
      try {
        let snapshot: Snapshot | undefined;
        if (files.snapshot && files.snapshot.revision >= from) {
          const stored = await files.readSnapshot(fs, layout.snapshot(stream), stream);
          if (!stored || stored.position !== files.snapshot.position) {
            if (readOnly && attempt < VIEW_RETRIES) {
              await this.#reload(entry);
              continue;
            }
            throw this.#snapshotChanged(stream);
          }
          snapshot = stored.snapshot;
        }
        const withSnapshot = snapshot ? { revision, snapshot } : { revision };
        const after = snapshot ? snapshot.revision + 1 : from;
        const journal = files.journal;
        if (after > revision || journal.firstPosition === 0) return { ...withSnapshot, events: EMPTY };
        const { start, recent } = this.#startOf(entry, files, 'revision', after, length);
        // Once read again for what the writer appended, the journal's lines up to the length found then are what
        // this read shows: a writer that goes on appending meanwhile does not make the read start over.
        const opened = recent ?? (await this.#openJournal(entry, files, grownReloaded));
        if (opened === 'grown') {
          // The writer appended since the view read this journal: read it again, to show what is there now.
          grownReloaded = true;
          await this.#reload(entry, false);
          continue;
        }
        const handle = opened;
        if (!handle) {
          if (readOnly && attempt < VIEW_RETRIES) {
            await this.#reload(entry);
            continue;
          }
          throw this.#journalChanged(stream);
        }
        const window: EventWindow = { minRevision: after, minPosition: 1, maxPosition: Number.MAX_SAFE_INTEGER };
        handedOver = true;
        // One stream read at a time by a caller: its next chunk is read while this one's events are taken.
        const events = this.#events(handle, stream, start, length, window, form, () => files.release(), true);
        return { ...withSnapshot, events };
      } finally {
        if (!handedOver) files.release();
      }
    }
  }

  /** Every change from `from` up to the watermark (taken when iteration starts), merged by position. */
  readAll<T extends { position: number }>(from: number, form: EventForm<T>): AsyncIterable<T> {
    return {
      [Symbol.asyncIterator]: () => {
        const pinned: StreamFiles[] = [];
        // Once: at the end of the iteration, or at `closeAll` for one abandoned part-way.
        const release = () => {
          if (!this.#open.delete(release)) return;
          for (const files of pinned) files.release();
        };
        this.#open.add(release);
        return mergeByPosition(() => this.#feedSources(from, pinned, form), release);
      },
    };
  }

  /** The inputs of a feed read, fixed now: each stream's version as of the watermark, pinned into `pinned`. */
  #feedSources<T extends { position: number }>(from: number, pinned: StreamFiles[], form: EventForm<T>): FeedSource<T>[] {
    // Everything at or below the watermark is settled; nothing above it is shown, so nothing is ever skipped.
    const upTo = this.#ctx.positions().watermark;
    if (from > upTo) return [];
    const [reloaded] = this.#reloaded;
    if (reloaded !== undefined) throw this.#journalChanged(reloaded);
    const sources: FeedSource<T>[] = [];
    const within = (position: number) => position >= from && position <= upTo;
    // Versions held for reads up to a change are let go once it is at or below the watermark, also of streams this read skips.
    for (const entry of this.#holding) {
      entry.dropHeldVersions(upTo);
      if (!entry.holdsVersions) this.#holding.delete(entry);
    }
    // A stream whose latest change is before `from` has nothing to show: no version of it holds a later position.
    for (const entry of from <= 1 ? this.#ctx.entries.values() : this.#changes.from(from)) {
      const tombstone = entry.tombstone;
      if (tombstone && within(tombstone.position)) {
        sources.push(single(tombstone.position, async () => form.fromRecord(changeRecord(entry.name, DELETED_RECORD, tombstone, null))));
      }
      // A change above the watermark is not shown yet: the stream shows as it was before that change.
      entry.dropHeldVersions(upTo);
      const files = entry.filesAsOf(upTo);
      const { snapshot, journal } = files;
      const fromSnapshot = snapshot !== undefined && within(snapshot.position);
      const fromJournal = journal.firstPosition !== 0 && journal.lastPosition >= from && journal.firstPosition <= upTo;
      if (!fromSnapshot && !fromJournal) continue;
      files.pin();
      pinned.push(files);
      if (fromSnapshot) sources.push(single(snapshot.position, async () => form.fromRecord(await this.#snapshotRecord(entry.name, files, snapshot))));
      if (fromJournal) sources.push(this.#journalSource(entry, files, Math.max(from, journal.firstPosition), upTo, form));
    }
    return sources;
  }

  /** Releases the descriptors and pins of readers that were never iterated to the end (at `close`). */
  closeAll(): void {
    for (const close of [...this.#open]) close();
    this.#open.clear();
  }

  /**
   * The writer keeps every version a reader pinned readable, so a snapshot that does not match its version
   * under the writer is damage; a read-only view's snapshot was replaced by the writer (ask for a reopen).
   */
  #snapshotChanged(stream: StreamId): Error {
    const path = this.#ctx.layout.snapshot(stream);
    if (this.#ctx.readOnly) {
      return new StorageError(`@sessionfold/store-file: ${path} was replaced by the writer after this read-only store opened; reopen it.`);
    }
    return new CorruptionError(path, 1, 'the snapshot file changed under the store');
  }

  #journalChanged(stream: StreamId): Error {
    const path = this.#ctx.layout.journal(stream);
    if (this.#ctx.readOnly) {
      return new StorageError(`@sessionfold/store-file: ${path} was replaced by the writer after this read-only store opened; reopen it.`);
    }
    return new StorageError(`@sessionfold/store-file: ${path} is missing.`);
  }

  async #snapshotRecord(stream: StreamId, files: StreamFiles, mark: ChangeMark): Promise<RecordedEvent> {
    try {
      const stored = await files.readSnapshot(this.#ctx.fs, this.#ctx.layout.snapshot(stream), stream);
      if (!stored || stored.position !== mark.position) throw this.#snapshotChanged(stream);
      return changeRecord(stream, SNAPSHOT_RECORD, mark, stored.snapshot as unknown as JsonValue);
    } catch (error) {
      if (error instanceof CorruptionError) this.#ctx.corrupted(error);
      throw error;
    }
  }

  /** A stream's journal as a feed input, opened only when the merge first needs it. */
  #journalSource<T extends { position: number }>(entry: StreamEntry, files: StreamFiles, from: number, upTo: number, form: EventForm<T>): FeedSource<T> {
    let events: JournalEvents<T> | undefined;
    /** The journal opened, by the first `next` or ahead of it by `prefetch`. */
    let opened: Promise<JournalEvents<T>> | undefined;
    const open = () =>
      (opened ??= (async () => {
        const journal = files.journal;
        const end = journal.length;
        const { start, recent } = this.#startOf(entry, files, 'position', from, end);
        // A journal appended to since the view read it still holds, unchanged, every line up to `end`.
        const handle = recent ?? (await this.#openJournal(entry, files, true));
        if (!handle || handle === 'grown') throw this.#journalChanged(entry.name);
        const window: EventWindow = { minRevision: 1, minPosition: from, maxPosition: upTo };
        events = this.#events(handle, entry.name, start, end, window, form);
        return events;
      })());
    return {
      key: from,
      // Ahead of the merge only the file is opened and its first bytes read: events decoded that early would live
      // long enough to be promoted to the old generation, many journals' worth of them, before the merge takes them.
      // A failure fetched ahead is reported by the `next` that takes it.
      prefetch: () =>
        void open().then(
          (ahead) => ahead.prefetch(),
          () => undefined,
        ),
      // Most events are decoded already: those are handed over without a promise (three per event, otherwise).
      next: () => (events ? (events.takeReady() ?? stepped(events.next())) : open().then((first) => stepped(first.next()))),
      close: async () => {
        await opened?.catch(() => undefined);
        await events?.return?.();
      },
    };
  }

  /**
   * Where a read of `files` for the events from `from` (by revision or position) up to byte `end` starts: the latest
   * recent write at or before it, whose bytes the writer then reads at once (`recent`), else the checkpoint before it.
   */
  #startOf(entry: StreamEntry, files: StreamFiles, by: 'revision' | 'position', from: number, end: number): { start: StartPoint; recent?: JournalHandle } {
    const written = files.recentStart(by, from);
    const recent = written && entry.readRecent(files, written.offset, end);
    return written && recent ? { start: written, recent } : { start: written ?? startPoint(files.journal, by, from) };
  }

  /** The stream has a journal or a snapshot file. */
  async #onDisk(stream: StreamId): Promise<boolean> {
    const { fs, layout } = this.#ctx;
    for (const path of [layout.journal(stream), layout.snapshot(stream)]) {
      try {
        await fs.lstat(path);
        return true;
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw unreadable(path, error);
      }
    }
    return false;
  }

  /**
   * A descriptor on the journal of `files`. A read-only view, which knows journals only as they were when it
   * read them, gets undefined for one the writer replaced since (its offsets no longer apply), and `'grown'`
   * for one the writer appended to.
   */
  async #openJournal(entry: StreamEntry, files: StreamFiles, grownIsSame = false): Promise<JournalHandle | 'grown' | undefined> {
    const { fs, layout, readOnly } = this.#ctx;
    const path = layout.journal(entry.name);
    let handle: JournalHandle | undefined;
    try {
      handle = await files.openJournal(fs, path);
    } catch (cause) {
      if (readOnly && errorCode(cause) === 'ENOENT') return undefined;
      throw new StorageError(`@sessionfold/store-file: could not read ${path}.`, { cause });
    }
    if (handle && readOnly && files.journal.ino !== 0) {
      const same = await this.#sameFile(handle, files.journal, path);
      if (same !== true && !(same === 'grown' && grownIsSame)) {
        handle.done();
        return same === 'grown' ? 'grown' : undefined;
      }
    }
    return handle;
  }

  /** The descriptor's file is the journal described (true), that journal appended to (`'grown'`), or another file (false). */
  async #sameFile(handle: JournalHandle, journal: JournalInfo, path: string): Promise<boolean | 'grown'> {
    let stats: { size: number; ino: number };
    try {
      stats = await this.#ctx.fs.fstat(handle.fd);
    } catch (cause) {
      handle.done();
      throw new StorageError(`@sessionfold/store-file: could not read ${path}.`, { cause });
    }
    // The same file grown shorter was not replaced but cut: its read reports that (see `journalEvents`).
    if (stats.ino !== journal.ino) return false;
    // Bytes past a torn tail the view's read of the journal already saw are the writer's appends since.
    return stats.size > journal.length + journal.tornBytes ? 'grown' : true;
  }

  /**
   * A read-only view's stream files changed under it: reads the snapshot, the journal, and the snapshot again,
   * until both snapshot reads agree (the writer replaces the snapshot before the journal, so the journal read
   * between them belongs with it), then takes that as the stream's state.
   */
  async #reload(entry: StreamEntry, replaced = true): Promise<void> {
    const { fs, layout } = this.#ctx;
    const stream = entry.name;
    for (let attempt = 0; attempt < VIEW_RETRIES; attempt++) {
      const first = await readSnapshotFile(fs, layout.snapshot(stream), stream);
      let journal: JournalInfo | undefined;
      let failure: unknown;
      try {
        journal = await scanJournal(fs, layout.journal(stream), stream, first?.snapshot.revision ?? 0, false);
      } catch (error) {
        failure = error;
      }
      const second = await readSnapshotFile(fs, layout.snapshot(stream), stream);
      if ((first?.position ?? 0) !== (second?.position ?? 0)) continue;
      if (failure !== undefined) throw failure;
      // Files appended to keep every position the view's feed showed; replaced ones do not.
      if (replaced) this.#reloaded.add(stream);
      entry.load(journal, first && { revision: first.snapshot.revision, position: first.position, recordedAt: first.recordedAt });
      return;
    }
    throw new StorageError(`@sessionfold/store-file: the files of ${stream} keep changing under this read-only store; reopen it.`);
  }

  #events<T>(
    handle: JournalHandle,
    stream: StreamId,
    start: StartPoint,
    end: number,
    window: EventWindow,
    form: EventForm<T>,
    onDone?: () => void,
    readAhead = false,
  ): JournalEvents<T> {
    const { fs, layout } = this.#ctx;
    // A reader that is never iterated would keep its descriptor and pin; `closeAll` releases those.
    let open = true;
    const done = () => {
      if (!open) return;
      open = false;
      this.#open.delete(done);
      handle.done();
      onDone?.();
    };
    this.#open.add(done);
    const owned: FileSystem = { ...fs, close: async () => done() };
    // Bytes read already (see `StreamEntry.readRecent`) are taken from the handle, and checked like any others.
    if (handle.recent) owned.read = readFromBytes(handle.recent);
    return journalEvents(owned, handle.fd, layout.journal(stream), stream, start, end, window, form, (error) => this.#ctx.corrupted(error), readAhead);
  }
}

/** A `read` over the bytes a handle carries, for offsets from theirs on (a read past their end reads nothing). */
function readFromBytes({ offset, bytes }: RecentBytes): FileSystem['read'] {
  return async (_fd, buffer, at, length, position) => {
    const from = position - offset;
    if (from < 0) throw new RangeError(`a read at ${position} is before the bytes kept from ${offset}`);
    return bytes.copy(buffer, at, from, Math.min(bytes.length, from + length));
  };
}

/** The value of an iterator step, or undefined at its end: what a `FeedSource` gives. */
async function stepped<T>(step: Promise<IteratorResult<T>>): Promise<T | undefined> {
  const result = await step;
  return result.done ? undefined : result.value;
}

function single<T extends { position: number }>(position: number, make: () => Promise<T | undefined>): FeedSource<T> {
  let done = false;
  return {
    key: position,
    next: async () => {
      if (done) return undefined;
      done = true;
      return make();
    },
    close: async () => undefined,
  };
}

function changeRecord(stream: StreamId, type: string, mark: ChangeMark, data: JsonValue): RecordedEvent {
  return { streamId: stream, type, data, schemaVersion: 1, revision: mark.revision, position: mark.position, recordedAt: mark.recordedAt };
}
