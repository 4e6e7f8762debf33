import { CorruptionError, STREAM_ID_PATTERN, type StreamId } from '@sessionfold/core/kernel';
import type { FileSystem } from './fs-layer.js';
import { isPositiveInt } from './journal-codec.js';
import { readRecordLog, RecordLog } from './record-log.js';
import type { ChangeMark } from './stream-entry.js';

/**
 * `tombstones.jsonl`: one framed line per deleted stream, written (and fdatasynced) before the stream's files
 * are removed. It keeps the `$deleted` changes of the feed, with their positions, across restarts, and tells
 * an opening writer which leftover files belong to a delete that was cut short.
 */
export class Tombstones {
  readonly #log: RecordLog;
  /** The latest tombstone of each stream. */
  readonly marks: Map<StreamId, ChangeMark>;

  private constructor(log: RecordLog, marks: Map<StreamId, ChangeMark>) {
    this.#log = log;
    this.marks = marks;
  }

  /** Reads the log (cutting a torn tail when `repair` is set); every complete line must be a tombstone. */
  static async load(fsl: FileSystem, path: string, repair: boolean): Promise<Tombstones> {
    const read = await readRecordLog(fsl, path, repair);
    const marks = new Map<StreamId, ChangeMark>();
    for (const record of read?.records ?? []) {
      const { stream, revision, position, recordedAt } = (record.value ?? {}) as Record<string, unknown>;
      if (
        typeof stream !== 'string' ||
        !STREAM_ID_PATTERN.test(stream) ||
        !isPositiveInt(revision) ||
        !isPositiveInt(position) ||
        typeof recordedAt !== 'string'
      ) {
        throw new CorruptionError(path, record.line, 'not a tombstone record');
      }
      marks.set(stream, { revision, position, recordedAt });
    }
    return new Tombstones(read?.log ?? new RecordLog(fsl, path), marks);
  }

  /** The largest position of any tombstone (0 when there is none). */
  get maxPosition(): number {
    let max = 0;
    for (const mark of this.marks.values()) max = Math.max(max, mark.position);
    return max;
  }

  /** Records `stream`'s deletion durably. */
  async add(stream: StreamId, mark: ChangeMark): Promise<void> {
    await this.#log.append([JSON.stringify({ stream, revision: mark.revision, position: mark.position, recordedAt: mark.recordedAt })]);
    this.marks.set(stream, mark);
  }
}
