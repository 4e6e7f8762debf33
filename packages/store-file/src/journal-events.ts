import { CorruptionError, SessionfoldError, StorageError, type RecordedEvent, type StreamId } from '@sessionfold/core/kernel';
import type { FileSystem } from './fs-layer.js';
import { asEventLine, misplaced } from './journal-codec.js';
import { LineReader } from './journal-reader.js';
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
 * also told to `onCorruption`.
 */
export function journalEvents(
  fsl: FileSystem,
  fd: number,
  path: string,
  stream: StreamId,
  start: StartPoint,
  end: number,
  window: EventWindow,
  onCorruption?: (error: CorruptionError) => void,
): AsyncIterableIterator<RecordedEvent> {
  const reader = new LineReader(fsl, fd, path, start.offset, end, start.line);
  let ready: RecordedEvent[] = [];
  let index = 0;
  let finished = false;
  const finish = async () => {
    if (finished) return;
    finished = true;
    ready = [];
    await fsl.close(fd).catch(() => undefined);
  };
  const done: IteratorResult<RecordedEvent> = { value: undefined, done: true };

  const take = (value: unknown, no: number): void => {
    const event = asEventLine(value);
    if (typeof event === 'string') throw new CorruptionError(path, no, event);
    if (event.stream !== undefined && event.stream !== stream) throw new CorruptionError(path, no, misplaced(event.stream));
    if (event.position > window.maxPosition) {
      reader.stop();
      return;
    }
    if (event.revision < window.minRevision || event.position < window.minPosition) return;
    const recorded: RecordedEvent = {
      streamId: stream,
      type: event.type,
      data: event.data,
      schemaVersion: event.schemaVersion ?? 1,
      revision: event.revision,
      position: event.position,
      recordedAt: event.recordedAt,
    };
    if (event.eventId !== undefined) recorded.eventId = event.eventId;
    ready.push(recorded);
  };

  /** Decodes the next chunk into `ready`; false at the end of the window. */
  const fill = async (): Promise<boolean> => {
    ready = [];
    index = 0;
    while (ready.length === 0) {
      if (!(await reader.visit(take))) return false;
    }
    return true;
  };

  return {
    async next(): Promise<IteratorResult<RecordedEvent>> {
      if (finished) return done;
      if (index < ready.length) return { value: ready[index++] as RecordedEvent, done: false };
      try {
        if (await fill()) return { value: ready[index++] as RecordedEvent, done: false };
      } catch (error) {
        await finish();
        if (error instanceof CorruptionError) onCorruption?.(error);
        if (error instanceof SessionfoldError) throw error;
        throw new StorageError(`@sessionfold/store-file: could not read ${path}.`, { cause: error });
      }
      await finish();
      return done;
    },
    async return(): Promise<IteratorResult<RecordedEvent>> {
      await finish();
      return done;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
