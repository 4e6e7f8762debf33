import { DELETED_RECORD, SNAPSHOT_RECORD, type AppendResult } from '@sessionfold/core/kernel';
import type { BlobRecord, ChangeRecord } from './records.js';
import type { Broken } from './scan.js';

/** Where a record or a run of records lies: the segment (by its name's number), the byte offset and length. */
export interface Location {
  segment: number;
  offset: number;
  bytes: number;
}

/** A `$snapshot` or `$deleted` record of a stream, where the feed finds it. */
export interface MarkRecord {
  revision: number;
  position: number;
  at: Location;
}

/**
 * Slots of one run in `StreamEntry.runs`: where (the segment's ordinal in `StreamIndex.bases` × `OFFSET_SPAN` + the
 * offset) and how much (bytes × `COUNT_SPAN` + events). Two numbers a run: a stream written one event at a time
 * among many others has a run per event, and an index of 100,000 such streams must stay small.
 */
export const RUN_SLOTS = 2;
const OFFSET_SPAN = 2 ** 32;
const COUNT_SPAN = 2 ** 21;

/** One run of `runs` at slot `i`, unpacked: the segment's ordinal, the offset, the bytes and how many events. */
export function runAt(runs: readonly number[], i: number): { ordinal: number; offset: number; bytes: number; count: number } {
  const where = runs[i] as number;
  const size = runs[i + 1] as number;
  return { ordinal: Math.floor(where / OFFSET_SPAN), offset: where % OFFSET_SPAN, bytes: Math.floor(size / COUNT_SPAN), count: size % COUNT_SPAN };
}

/** `runAt`'s parts packed back into the two numbers of a run. */
export function packRun(ordinal: number, offset: number, bytes: number, count: number): [number, number] {
  return [ordinal * OFFSET_SPAN + offset, bytes * COUNT_SPAN + count];
}

/**
 * What the index knows of one stream: its revision (0 while it does not exist), its current snapshot and last
 * deletion, where its live events lie (runs of whole lines, adjacent batches merged), its event ids and blobs.
 */
export class StreamEntry {
  revision = 0;
  snapshot: MarkRecord | undefined;
  deleted: MarkRecord | undefined;
  /** Flattened runs of the live events, in revision order: `RUN_SLOTS` numbers each. */
  runs: number[] = [];
  /** The revision of the first event of the first run. */
  firstRunRevision = 0;
  /** Each event id of the live events, with the result of the append that wrote it. */
  eventIds: Map<string, { result: AppendResult; revision: number }> | undefined;
  blobs: Set<string> | undefined;

  constructor(readonly name: string) {}

  /** The revision of the first live event, or undefined when the stream has none after its snapshot. */
  get firstEventRevision(): number | undefined {
    return this.runs.length === 0 ? undefined : this.firstRunRevision;
  }

  /**
   * What the stream was before each snapshot or deletion applied while a feed read was under way (`until` the
   * position of that record), oldest first: such a read lists what was live when it started.
   */
  past: PastState[] | undefined;

  /** Whether a feed read that started when the log ended at `end` lists the record of this stream at `position`, of `type` and `revision`. */
  isLive(type: string, revision: number, position: number, end = Number.POSITIVE_INFINITY): boolean {
    const state: LiveState = this.past?.find((past) => past.until > end) ?? this;
    if (type === DELETED_RECORD) return state.deleted?.position === position;
    if (type === SNAPSHOT_RECORD) return state.snapshot?.position === position;
    return state.revision > 0 && position > (state.deleted?.position ?? 0) && revision > (state.snapshot?.revision ?? 0);
  }
}

/** Events found after missing revisions of their stream, where they were found. */
export interface Gap {
  stream: string;
  after: number;
  revision: number;
  position: number;
  file: string;
  line: number;
}

/** What decides which records of a stream the feed lists. */
interface LiveState {
  revision: number;
  snapshot: MarkRecord | undefined;
  deleted: MarkRecord | undefined;
}

/** A stream's `LiveState` up to the position `until`. */
interface PastState extends LiveState {
  until: number;
}

/** Bytes that no read will ask for again, per segment: what cleaning a segment would reclaim. */
export type DeadBytes = Map<number, number>;

/**
 * The in-memory index of the log: every stream's entry, the last position, and the rules each record must keep
 * (positions grow; a stream's events count up from its revision; a snapshot and a deletion fit the stream). The
 * writer, the open scan and a read-only view apply records through the same rules; a record that breaks one is
 * damage, named by `apply`'s result.
 */
export class StreamIndex {
  readonly streams = new Map<string, StreamEntry>();
  lastPosition = 0;
  readonly dead: DeadBytes = new Map();
  /** How many streams own each blob: a blob no stream owns any more is not read and may be removed. */
  readonly blobOwners = new Map<string, number>();
  /** The segments runs point into, by ordinal (base numbers, in the order the index first met them). */
  readonly bases: number[] = [];
  readonly #ordinals = new Map<number, number>();

  /** The ordinal runs use for the segment whose base number is `base`. */
  ordinal(base: number): number {
    let ordinal = this.#ordinals.get(base);
    if (ordinal === undefined) {
      ordinal = this.bases.length;
      this.bases.push(base);
      this.#ordinals.set(base, ordinal);
    }
    return ordinal;
  }

  /** Feed reads under way, and the entries that keep past states for them. */
  #feeds = 0;
  #gaps: Gap[] = [];
  readonly #withPast = new Set<StreamEntry>();

  /** Starts a feed read: it lists records up to the current last position, as live as they were now. Call `end` when done. */
  beginFeed(): { end: number; done(): void } {
    this.#feeds++;
    let ended = false;
    return {
      end: this.lastPosition,
      done: () => {
        if (ended) return;
        ended = true;
        if (--this.#feeds > 0) return;
        for (const entry of this.#withPast) entry.past = undefined;
        this.#withPast.clear();
      },
    };
  }

  #keepPast(entry: StreamEntry, until: number): void {
    if (this.#feeds === 0) return;
    (entry.past ??= []).push({ until, revision: entry.revision, snapshot: entry.snapshot, deleted: entry.deleted });
    this.#withPast.add(entry);
  }

  /** Takes what `other` holds in place of what this index held (a view that read the log again). */
  replaceWith(other: StreamIndex): void {
    this.streams.clear();
    for (const [name, entry] of other.streams) this.streams.set(name, entry);
    this.dead.clear();
    for (const [segment, bytes] of other.dead) this.dead.set(segment, bytes);
    this.lastPosition = other.lastPosition;
    this.blobOwners.clear();
    for (const [sha, owners] of other.blobOwners) this.blobOwners.set(sha, owners);
    this.bases.length = 0;
    this.#ordinals.clear();
    for (const base of other.bases) this.ordinal(base);
  }

  entry(stream: string): StreamEntry | undefined {
    return this.streams.get(stream);
  }

  #entry(stream: string): StreamEntry {
    let entry = this.streams.get(stream);
    if (entry === undefined) {
      entry = new StreamEntry(stream);
      this.streams.set(stream, entry);
    }
    return entry;
  }

  #kill(at: Location): void {
    this.dead.set(at.segment, (this.dead.get(at.segment) ?? 0) + at.bytes);
  }

  /** Why `batch` (one record, or the lines of one append) cannot follow what the index holds, and at which of its lines; or undefined. */
  check(batch: readonly ChangeRecord[]): Broken | undefined {
    const first = batch[0] as ChangeRecord;
    const entry = this.streams.get(first.stream);
    const revision = entry?.revision ?? 0;
    let position = this.lastPosition;
    for (let i = 0; i < batch.length; i++) {
      const record = batch[i] as ChangeRecord;
      if (record.position <= position) return { reason: `position ${record.position} does not follow position ${position}`, index: i };
      position = record.position;
      // The line that said more would come is the damaged one: the next may well start a batch of its own.
      if (i > 0 && record.stream !== first.stream) return { reason: `the batch of ${first.stream} goes on with a line of ${record.stream}`, index: i - 1 };
    }
    // Lines missing before a record are legitimate only where cleaning removed them: they were dead, covered by a
    // later snapshot or deletion of the stream. A snapshot or deletion past the revision the index holds covers
    // them itself; events after missing lines are a gap that `unresolvedGaps` checks once the whole log is read.
    if (first.type === SNAPSHOT_RECORD) {
      if (revision > 0 && first.revision < (entry?.snapshot?.revision ?? 0))
        return { reason: `the snapshot's revision ${first.revision} is older than the stream's snapshot`, index: 0 };
      return undefined;
    }
    if (first.type === DELETED_RECORD) {
      return first.revision >= revision ? undefined : { reason: `a deletion at revision ${first.revision} of a stream at revision ${revision}`, index: 0 };
    }
    if (revision > 0 && first.revision <= revision)
      return { reason: `revision ${first.revision} of ${first.stream} does not follow revision ${revision}`, index: 0 };
    for (let i = 1; i < batch.length; i++) {
      const record = batch[i] as ChangeRecord;
      if (record.revision !== first.revision + i)
        return { reason: `revision ${record.revision} of ${record.stream} does not follow revision ${first.revision + i - 1}`, index: i };
      if (record.type === SNAPSHOT_RECORD || record.type === DELETED_RECORD) return { reason: `a ${record.type} record inside a batch`, index: i };
    }
    return undefined;
  }

  /**
   * The gaps `apply` met (events after missing revisions) that no later snapshot or deletion of their stream
   * covers: damage, not cleaning. The covered ones are forgotten.
   */
  unresolvedGaps(): Gap[] {
    const open = this.#gaps.filter((gap) => {
      const entry = this.streams.get(gap.stream);
      if (entry === undefined) return true;
      if ((entry.deleted?.position ?? 0) > gap.position) return false;
      return !(entry.snapshot !== undefined && entry.snapshot.position > gap.position && entry.snapshot.revision >= gap.revision - 1);
    });
    this.#gaps = [];
    return open;
  }

  /** Applies a batch that `check` accepted, found at `at` (the whole batch's bytes); `where` names its first line, for a gap. */
  apply(batch: readonly ChangeRecord[], at: Location, where?: { file: string; line: number }): void {
    const first = batch[0] as ChangeRecord;
    const last = batch[batch.length - 1] as ChangeRecord;
    const entry = this.#entry(first.stream);
    if (where !== undefined && entry.revision > 0 && first.revision > entry.revision + 1 && first.type !== SNAPSHOT_RECORD && first.type !== DELETED_RECORD) {
      this.#gaps.push({ stream: first.stream, after: entry.revision, revision: first.revision, position: first.position, ...where });
    }
    this.lastPosition = last.position;
    if (first.type === SNAPSHOT_RECORD || first.type === DELETED_RECORD) this.#keepPast(entry, first.position);
    if (first.type === SNAPSHOT_RECORD) {
      if (entry.snapshot !== undefined) this.#kill(entry.snapshot.at);
      entry.snapshot = { revision: first.revision, position: first.position, at };
      if (entry.revision < first.revision) {
        this.#dropThrough(entry, first.revision);
        entry.revision = first.revision;
        return;
      }
      this.#dropThrough(entry, first.revision);
      return;
    }
    if (first.type === DELETED_RECORD) {
      if (entry.deleted !== undefined) this.#kill(entry.deleted.at);
      if (entry.snapshot !== undefined) this.#kill(entry.snapshot.at);
      this.#dropThrough(entry, Number.POSITIVE_INFINITY);
      entry.deleted = { revision: first.revision, position: first.position, at };
      entry.revision = 0;
      entry.snapshot = undefined;
      entry.eventIds = undefined;
      for (const sha of entry.blobs ?? []) this.#disown(sha);
      entry.blobs = undefined;
      return;
    }
    // Runs count revisions one by one from `firstRunRevision`: events after a gap (lines cleaning removed) start
    // the runs anew. What came before the gap is dead if the gap is legitimate (`unresolvedGaps` says if not).
    if (entry.runs.length > 0 && first.revision !== entry.revision + 1) this.#dropThrough(entry, first.revision - 1);
    entry.revision = last.revision;
    const result = { revision: last.revision, position: last.position };
    for (const record of batch) if (record.eventId !== undefined) (entry.eventIds ??= new Map()).set(record.eventId, { result, revision: record.revision });
    const runs = entry.runs;
    const n = runs.length;
    const ordinal = this.ordinal(at.segment);
    const prior = n > 0 ? runAt(runs, n - RUN_SLOTS) : undefined;
    if (
      prior !== undefined &&
      prior.ordinal === ordinal &&
      prior.offset + prior.bytes === at.offset &&
      prior.count + batch.length < COUNT_SPAN &&
      prior.bytes + at.bytes < OFFSET_SPAN
    ) {
      runs[n - 1] = packRun(ordinal, prior.offset, prior.bytes + at.bytes, prior.count + batch.length)[1];
    } else {
      if (n === 0) entry.firstRunRevision = first.revision;
      runs.push(...packRun(ordinal, at.offset, at.bytes, batch.length));
    }
  }

  /** Records that `blob.stream` owns `blob.sha256`, or (`gone`) no longer does. */
  applyBlob(blob: BlobRecord): void {
    const entry = this.#entry(blob.stream);
    const owned = (entry.blobs ??= new Set());
    if (owned.has(blob.sha256) !== blob.gone) return;
    if (blob.gone) {
      owned.delete(blob.sha256);
      this.#disown(blob.sha256);
      return;
    }
    owned.add(blob.sha256);
    this.blobOwners.set(blob.sha256, (this.blobOwners.get(blob.sha256) ?? 0) + 1);
  }

  #disown(sha256: string): void {
    const owners = (this.blobOwners.get(sha256) ?? 1) - 1;
    if (owners > 0) this.blobOwners.set(sha256, owners);
    else this.blobOwners.delete(sha256);
  }

  /** Whether any stream owns the blob `sha256`. */
  owned(sha256: string): boolean {
    return (this.blobOwners.get(sha256) ?? 0) > 0;
  }

  /** Forgets the events of `entry` up to `revision` (runs wholly covered; event ids of the dropped events). */
  #dropThrough(entry: StreamEntry, revision: number): number {
    const runs = entry.runs;
    let keepFrom = 0;
    while (keepFrom < runs.length) {
      const run = runAt(runs, keepFrom);
      const next = entry.firstRunRevision + run.count;
      if (next - 1 > revision) break;
      this.#kill({ segment: this.bases[run.ordinal] as number, offset: 0, bytes: run.bytes });
      entry.firstRunRevision = next;
      keepFrom += RUN_SLOTS;
    }
    if (keepFrom > 0) entry.runs = runs.slice(keepFrom);
    if (entry.eventIds !== undefined) {
      for (const [id, held] of entry.eventIds) if (held.revision <= revision) entry.eventIds.delete(id);
      if (entry.eventIds.size === 0) entry.eventIds = undefined;
    }
    return keepFrom / RUN_SLOTS;
  }
}
