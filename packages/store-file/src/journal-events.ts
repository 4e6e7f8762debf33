import { CorruptionError, SessionfoldError, StorageError, type RecordedEvent, type StreamId } from '@sessionfold/core';
import type { FileSystem } from './fs-layer.js';
import { asEventLine } from './journal-codec.js';
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
 * goes (bytes can rot after open). Closes `fd` when done, abandoned or failed.
 */
export async function* journalEvents(
  fsl: FileSystem,
  fd: number,
  path: string,
  stream: StreamId,
  start: StartPoint,
  end: number,
  window: EventWindow,
  onClose?: () => void,
): AsyncGenerator<RecordedEvent> {
  try {
    const reader = new LineReader(fsl, fd, path, start.offset, end, start.line);
    for (let lines = await reader.next(); lines; lines = await reader.next()) {
      for (const line of lines) {
        const event = asEventLine(line.value);
        if (typeof event === 'string') throw new CorruptionError(path, line.no, event);
        if (event.position > window.maxPosition) return;
        if (event.revision < window.minRevision || event.position < window.minPosition) continue;
        const recorded: RecordedEvent = {
          streamId: stream,
          type: event.type,
          data: event.data,
          revision: event.revision,
          position: event.position,
          recordedAt: event.recordedAt,
        };
        if (event.eventId !== undefined) recorded.eventId = event.eventId;
        yield recorded;
      }
    }
  } catch (error) {
    if (error instanceof SessionfoldError) throw error;
    throw new StorageError(`@sessionfold/store-file: could not read ${path}.`, { cause: error });
  } finally {
    onClose?.();
    await fsl.close(fd).catch(() => undefined);
  }
}
