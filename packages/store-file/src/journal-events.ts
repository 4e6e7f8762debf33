import { CorruptionError, SessionfoldError, StorageError, toStoredEvent, type RecordedEvent, type StoredEvent, type StreamId } from '@sessionfold/core/kernel';
import type { FileSystem } from './fs-layer.js';
import { asEventHead, asEventLine, decodeLine, decodeStoredLine, misplaced, type EventHead, type EventLine } from './journal-codec.js';
import { LineReader, type LineDecoder } from './journal-reader.js';
import type { JournalInfo } from './journal-scan.js';

/** Where to start reading a journal: byte offset and 1-based line number. */
export interface StartPoint {
  offset: number;
  line: number;
}

/** The last checkpoint at or before the first live line with `revision ≥ from` (or `position ≥ from`). */
export function startPoint(journal: JournalInfo, by: 'revision' | 'position', from: number): StartPoint {
  const checkpoints = journal.checkpoints;
  let lo = 0;
  let hi = checkpoints.length - 1;
  let found: StartPoint = { offset: journal.liveOffset, line: journal.liveLine };
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const checkpoint = checkpoints[mid] as (typeof checkpoints)[number];
    if (checkpoint[by] <= from) {
      found = checkpoint;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

/**
 * What a read makes of each line: the port's events with their data parsed (`PARSED`), or with it as the stored
 * JSON text (`STORED`). `fromRecord` turns a record the store builds itself (`$snapshot`, `$deleted`) into that form.
 */
export interface EventForm<T> {
  decode: LineDecoder;
  check(value: unknown): EventHead | string;
  make(line: EventHead, stream: StreamId): T;
  fromRecord(record: RecordedEvent): T;
}

/** Events as `read` and `readAll` give them. */
export const PARSED: EventForm<RecordedEvent> = {
  decode: decodeLine,
  check: asEventLine,
  make(line, stream) {
    const event: RecordedEvent = {
      streamId: stream,
      type: line.type,
      data: (line as EventLine).data,
      schemaVersion: line.schemaVersion ?? 1,
      revision: line.revision,
      position: line.position,
      recordedAt: line.recordedAt,
    };
    if (line.eventId !== undefined) event.eventId = line.eventId;
    return event;
  },
  fromRecord: (record) => record,
};

/** Events as `readStored` and `readAllStored` give them: the data's JSON text is never parsed. */
export const STORED: EventForm<StoredEvent> = {
  decode: decodeStoredLine,
  check(value) {
    const head = asEventHead(value);
    if (typeof head === 'string') return head;
    return typeof (head as { dataJson?: unknown }).dataJson === 'string' ? head : 'data is missing';
  },
  make(line, stream) {
    const event: StoredEvent = {
      streamId: stream,
      type: line.type,
      dataJson: (line as EventHead & { dataJson: string }).dataJson,
      schemaVersion: line.schemaVersion ?? 1,
      revision: line.revision,
      position: line.position,
      recordedAt: line.recordedAt,
    };
    if (line.eventId !== undefined) event.eventId = line.eventId;
    return event;
  },
  fromRecord: toStoredEvent,
};

/** A journal's events: an async iterator that also hands out an event already decoded without a promise. */
export interface JournalEvents<T> extends AsyncIterableIterator<T> {
  /** The next event if its chunk is decoded already (as `next` would give it), else undefined: then call `next`. */
  takeReady(): T | undefined;
  /** Starts reading the next chunk's bytes, decoded only when `next` needs them. */
  prefetch(): void;
}

/**
 * The first read of a journal's events: a feed reads ahead of the merge in many journals at once, each holding its
 * chunk and the events decoded from it, so each starts small and grows only while it is read on.
 */
const FIRST_CHUNK_BYTES = 64 * 1024;

/**
 * The largest read of a journal's events, smaller than a scan's (`CHUNK_BYTES`): a chunk's events are decoded
 * together and live until the consumer has taken the last of them. A megabyte of them outlived young-generation
 * collections and was promoted, each chunk's worth, faster than old-generation collections kept up on a busy
 * machine: a read of 1M events once peaked at +278 MB. A quarter of that dies young.
 */
const EVENT_CHUNK_BYTES = 256 * 1024;

/** Which events of a journal range to hand out. */
export interface EventWindow {
  minRevision: number;
  minPosition: number;
  maxPosition: number;
}

/**
 * Streams the events of `fd` from `start` to byte `end` that fall in `window`, re-checking every line as it
 * goes (bytes can rot after open). A chunk's lines are decoded together and handed out one by one, which is
 * much cheaper per event than an async generator. Closes `fd` when done, abandoned or failed; damage found is
 * also told to `onCorruption`. With `readAhead`, each chunk's bytes are asked for as soon as the one before is
 * decoded, so the disk works while the consumer takes that chunk's events (one reader, one chunk more held).
 */
export function journalEvents<T>(
  fsl: FileSystem,
  fd: number,
  path: string,
  stream: StreamId,
  start: StartPoint,
  end: number,
  window: EventWindow,
  form: EventForm<T>,
  onCorruption?: (error: CorruptionError) => void,
  readAhead = false,
): JournalEvents<T> {
  const reader = new LineReader(fsl, fd, path, start.offset, end, start.line, EVENT_CHUNK_BYTES, FIRST_CHUNK_BYTES);
  let ready: T[] = [];
  let index = 0;
  let finished = false;
  let windowEnded = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    ready = [];
    // A chunk read ahead must land before the descriptor goes: its number could be another file's by then.
    await reader.settled();
    await fsl.close(fd).catch(() => undefined);
  };
  const done: IteratorResult<T> = { value: undefined, done: true };

  const take = (value: unknown, no: number): void => {
    const event = form.check(value);
    if (typeof event === 'string') throw new CorruptionError(path, no, event);
    if (event.stream !== undefined && event.stream !== stream) throw new CorruptionError(path, no, misplaced(event.stream));
    if (event.position > window.maxPosition) {
      windowEnded = true;
      reader.stop();
      return;
    }
    if (event.revision < window.minRevision || event.position < window.minPosition) return;
    ready.push(form.make(event, stream));
  };

  /** Decodes the next chunk into `ready`; false at the end of the window. */
  const fill = async (): Promise<boolean> => {
    ready = [];
    index = 0;
    while (ready.length === 0) {
      if (!(await reader.visit(take, form.decode))) {
        // The lines must fill every byte the store knows of: a journal cut or changed by hand reads short.
        if (!windowEnded && (reader.short || reader.tail.length > 0)) throw shortJournal(path, reader, end);
        return false;
      }
    }
    if (readAhead) reader.prefetch();
    return true;
  };

  return {
    prefetch(): void {
      if (!finished && index >= ready.length) reader.prefetch();
    },
    takeReady(): T | undefined {
      return !finished && index < ready.length ? (ready[index++] as T) : undefined;
    },
    async next(): Promise<IteratorResult<T>> {
      if (finished) return done;
      if (index < ready.length) return { value: ready[index++] as T, done: false };
      try {
        if (await fill()) return { value: ready[index++] as T, done: false };
      } catch (error) {
        await finish();
        if (error instanceof CorruptionError) onCorruption?.(error);
        if (error instanceof SessionfoldError) throw error;
        throw new StorageError(`@sessionfold/store-file: could not read ${path}.`, { cause: error });
      }
      await finish();
      return done;
    },
    async return(): Promise<IteratorResult<T>> {
      await finish();
      return done;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** The journal ends (or its last line is cut) before byte `end`, which the store knows it holds. */
function shortJournal(path: string, reader: LineReader, end: number): CorruptionError {
  const reached = reader.tailOffset + reader.tail.length;
  const reason = reader.short
    ? `the journal ends at byte ${reached}, short of the ${end} bytes the store knows it holds: it was cut or changed under the store`
    : `the ${end} bytes the store knows of end inside a line: the journal was changed under the store`;
  return new CorruptionError(path, reader.lineNo, reason);
}
