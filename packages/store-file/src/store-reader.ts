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
import { mergeByPosition, type FeedSource } from './feed.js';
import { errorCode, type FileSystem } from './fs-layer.js';
import { journalEvents, startPoint, type EventWindow, type StartPoint } from './journal-events.js';
import type { JournalInfo } from './journal-scan.js';
import type { Layout } from './layout.js';
import type { Positions } from './positions.js';
import { readSnapshotFile } from './snapshot-file.js';
import type { ChangeMark, StreamEntry } from './stream-entry.js';

const EMPTY: AsyncIterable<RecordedEvent> = { [Symbol.asyncIterator]: async function* () {} };

/** What the read side needs from the store. */
export interface ReaderContext {
  readonly fs: FileSystem;
  readonly layout: Layout;
  readonly readOnly: boolean;
  readonly entries: ReadonlyMap<StreamId, StreamEntry>;
  positions(): Positions;
}

/**
 * The read side of the store: one stream's snapshot and events, and the change feed merged by position.
 * Readers hold a descriptor on the journal they read, so a compaction that renames a new file into place
 * does not disturb them; a reader that finds the file replaced between looking and opening looks again.
 */
export class StoreReader {
  readonly #ctx: ReaderContext;
  /** Closers of reader descriptors not yet released, for `closeAll`. */
  readonly #open = new Set<() => void>();

  constructor(ctx: ReaderContext) {
    this.#ctx = ctx;
  }

  /** The stream as it is now: revision, the snapshot if it covers `from`, then the events after it. */
  async read(stream: StreamId, from: number): Promise<StreamRead> {
    const { fs, layout } = this.#ctx;
    const entry = this.#ctx.entries.get(stream);
    for (;;) {
      if (!entry || entry.revision === 0) return { revision: 0, events: EMPTY };
      const generation = entry.generation;
      const revision = entry.revision;
      const journal = entry.journal;
      let snapshot: Snapshot | undefined;
      if (entry.snapshot && entry.snapshot.revision >= from) {
        const stored = await readSnapshotFile(fs, layout.snapshot(stream), stream);
        if (entry.generation !== generation) continue;
        if (!stored || stored.position !== entry.snapshot.position) throw this.#snapshotChanged(stream);
        snapshot = stored.snapshot;
      }
      const withSnapshot = snapshot ? { revision, snapshot } : { revision };
      const after = snapshot ? snapshot.revision + 1 : from;
      if (after > revision || journal.firstPosition === 0) return { ...withSnapshot, events: EMPTY };
      const fd = await this.#openJournal(entry, generation);
      if (fd === undefined) continue;
      const window: EventWindow = { minRevision: after, minPosition: 1, maxPosition: Number.MAX_SAFE_INTEGER };
      return { ...withSnapshot, events: this.#events(fd, entry, startPoint(journal, 'revision', after), journal.length, window) };
    }
  }

  /** Every change from `from` up to the watermark, merged by position. */
  readAll(from: number): AsyncIterable<RecordedEvent> {
    // Everything at or below the watermark is settled; nothing above it is shown, so nothing is ever skipped.
    const upTo = this.#ctx.positions().watermark;
    if (from > upTo) return EMPTY;
    const sources: FeedSource[] = [];
    const within = (position: number) => position >= from && position <= upTo;
    for (const entry of this.#ctx.entries.values()) {
      const { snapshot, tombstone, journal } = entry;
      if (tombstone && within(tombstone.position)) {
        sources.push(single(tombstone.position, async () => changeRecord(entry.name, DELETED_RECORD, tombstone, null)));
      }
      if (snapshot && within(snapshot.position)) sources.push(single(snapshot.position, () => this.#snapshotRecord(entry, snapshot)));
      if (journal.firstPosition !== 0 && journal.lastPosition >= from && journal.firstPosition <= upTo) {
        sources.push(this.#journalSource(entry, Math.max(from, journal.firstPosition), upTo));
      }
    }
    return mergeByPosition(sources);
  }

  /** Releases the descriptors of readers that were never iterated to the end (at `close`). */
  closeAll(): void {
    for (const close of this.#open) close();
    this.#open.clear();
  }

  /**
   * The writer owns the snapshot files, so one that moved under a read-only view was replaced by the writer
   * (ask for a reopen); under the writer itself, it can only be damage.
   */
  #snapshotChanged(stream: StreamId): Error {
    const path = this.#ctx.layout.snapshot(stream);
    if (this.#ctx.readOnly) {
      return new StorageError(`@sessionfold/store-file: ${path} was replaced by the writer after this read-only store opened; reopen it.`);
    }
    return new CorruptionError(path, 1, 'the snapshot file changed under the store');
  }

  async #snapshotRecord(entry: StreamEntry, mark: ChangeMark): Promise<RecordedEvent | undefined> {
    const stored = await readSnapshotFile(this.#ctx.fs, this.#ctx.layout.snapshot(entry.name), entry.name);
    // A read-only view cannot see the later change that replaced it: refuse rather than skip it.
    if ((!stored || stored.position !== mark.position) && this.#ctx.readOnly) throw this.#snapshotChanged(entry.name);
    // Under the writer, a newer compaction replaced it: that change sits at a later position, past this read.
    if (!stored || stored.position !== mark.position) return undefined;
    return changeRecord(entry.name, SNAPSHOT_RECORD, mark, stored.snapshot as unknown as JsonValue);
  }

  /** A stream's journal as a feed input, opened only when the merge first needs it. */
  #journalSource(entry: StreamEntry, from: number, upTo: number): FeedSource {
    let events: AsyncIterableIterator<RecordedEvent> | undefined;
    return {
      key: from,
      next: async () => {
        while (!events) {
          const generation = entry.generation;
          const journal = entry.journal;
          if (journal.firstPosition === 0 || journal.lastPosition < from) return undefined;
          const fd = await this.#openJournal(entry, generation);
          if (fd === undefined) continue;
          const window: EventWindow = { minRevision: 1, minPosition: from, maxPosition: upTo };
          events = this.#events(fd, entry, startPoint(journal, 'position', from), journal.length, window);
        }
        const step = await events.next();
        return step.done ? undefined : step.value;
      },
      close: async () => {
        await events?.return?.();
      },
    };
  }

  /**
   * Opens `entry`'s journal for reading, or undefined when it was replaced since `generation` was read (the
   * caller looks again). A read-only view, which knows journals only as they were at its open, refuses one
   * the writer replaced since: its offsets no longer apply, and the honest answer is to ask for a reopen.
   */
  async #openJournal(entry: StreamEntry, generation: number): Promise<number | undefined> {
    const { fs, layout, readOnly } = this.#ctx;
    const path = layout.journal(entry.name);
    let fd: number;
    try {
      fd = await fs.open(path, 'r');
    } catch (cause) {
      if (entry.generation !== generation) return undefined;
      const hint = readOnly && errorCode(cause) === 'ENOENT' ? '; the writer removed it since this read-only store opened, reopen it' : '';
      throw new StorageError(`@sessionfold/store-file: could not read ${path}${hint}.`, { cause });
    }
    if (entry.generation !== generation) {
      await fs.close(fd).catch(() => undefined);
      return undefined;
    }
    if (readOnly && entry.journal.ino !== 0) await this.#assertSameFile(fd, entry.journal, path);
    return fd;
  }

  async #assertSameFile(fd: number, journal: JournalInfo, path: string): Promise<void> {
    const { fs } = this.#ctx;
    let stats: { size: number; ino: number };
    try {
      stats = await fs.fstat(fd);
    } catch (cause) {
      await fs.close(fd).catch(() => undefined);
      throw new StorageError(`@sessionfold/store-file: could not read ${path}.`, { cause });
    }
    if (stats.ino !== journal.ino || stats.size < journal.length) {
      await fs.close(fd).catch(() => undefined);
      throw new StorageError(`@sessionfold/store-file: ${path} was replaced by the writer after this read-only store opened; reopen it.`);
    }
  }

  #events(fd: number, entry: StreamEntry, start: StartPoint, end: number, window: EventWindow): AsyncIterableIterator<RecordedEvent> {
    const { fs, layout } = this.#ctx;
    // A reader that is never iterated would keep its descriptor; `closeAll` releases those.
    let open = true;
    const closeFd = () => {
      if (!open) return;
      open = false;
      this.#open.delete(closeFd);
      fs.close(fd).catch(() => undefined);
    };
    this.#open.add(closeFd);
    const owned: FileSystem = { ...fs, close: async () => closeFd() };
    return journalEvents(owned, fd, layout.journal(entry.name), entry.name, start, end, window);
  }
}

function single(position: number, make: () => Promise<RecordedEvent | undefined>): FeedSource {
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
  return { streamId: stream, type, data, revision: mark.revision, position: mark.position, recordedAt: mark.recordedAt };
}
