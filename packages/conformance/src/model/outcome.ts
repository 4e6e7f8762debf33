import { inspect } from 'node:util';
import {
  ConcurrencyError,
  CorruptionError,
  InvalidInputError,
  StorageError,
  StoreClosedError,
  StoreLockedError,
  type EventStore,
  type RecordedEvent,
} from '@sessionfold/core/kernel';
import { readFeed } from '../support.js';

/** What a call did: resolved with a value or rejected with an error. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Runs `action` and captures how it ended; synchronous throws count as rejections. */
export async function settle<T>(action: () => Promise<T> | T): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await action() };
  } catch (error) {
    return { ok: false, error };
  }
}

const KERNEL_ERRORS = [ConcurrencyError, InvalidInputError, StoreClosedError, CorruptionError, StorageError, StoreLockedError] as const;

/** The comparable face of an error: its kernel class and code, plus the fields a ConcurrencyError must carry. */
export function errorShape(error: unknown): Record<string, unknown> {
  const kernelClass = KERNEL_ERRORS.find((type) => error instanceof type);
  if (!kernelClass) return { unexpected: inspect(error, { depth: 3 }) };
  const shape: Record<string, unknown> = { error: kernelClass.name, code: (error as { code: string }).code };
  if (error instanceof ConcurrencyError) Object.assign(shape, { stream: error.stream, expected: error.expected, actual: error.actual });
  return shape;
}

/** An outcome with its value passed through `normalize` and its error reduced to `errorShape`. */
export function outcomeShape<T>(outcome: Outcome<T>, normalize: (value: T) => unknown = (v) => v): unknown {
  return outcome.ok ? { ok: normalize(outcome.value) } : { failed: errorShape(outcome.error) };
}

/** A record without its position and commit time, which differ between stores. */
export function recordShape(record: RecordedEvent): Record<string, unknown> {
  return {
    streamId: record.streamId,
    type: record.type,
    revision: record.revision,
    data: record.data,
    ...(record.eventId === undefined ? {} : { eventId: record.eventId }),
  };
}

/** The whole change feed and a map from each position to its rank, so stores with position gaps compare. */
export async function feedWithRanks(store: EventStore): Promise<{ feed: RecordedEvent[]; rank: (position: number) => number | 'absent' }> {
  const feed = await readFeed(store);
  const ranks = new Map(feed.map((record, index) => [record.position, index]));
  return { feed, rank: (position) => ranks.get(position) ?? 'absent' };
}
