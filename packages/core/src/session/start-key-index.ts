import type { StreamId } from '../kernel/port.js';
import type { SessionStreamState } from './model.js';

/** The start key a session's latest control state carries while it lives (not complete), if any. */
export function carriedStartKey(state: SessionStreamState | undefined): string | undefined {
  const record = state?.record;
  if (!record || record.phase === 'complete') return undefined;
  const key = record.state['startIdempotencyId'];
  return typeof key === 'string' ? key : undefined;
}

/**
 * Live sessions by the start key their latest control state carries (`startIdempotencyId`), however they were
 * made — started, registered, imported or checkpointed with one — so that a start by that key finds them.
 */
export class StartKeyIndex {
  readonly #streams = new Map<string, Set<StreamId>>();
  readonly #keys = new Map<StreamId, string>();

  /** Takes the stream's new state (undefined: the stream is gone). */
  update(stream: StreamId, state: SessionStreamState | undefined): void {
    const next = carriedStartKey(state);
    const previous = this.#keys.get(stream);
    if (next === previous) return;
    if (previous !== undefined) {
      const streams = this.#streams.get(previous);
      streams?.delete(stream);
      if (streams?.size === 0) this.#streams.delete(previous);
      this.#keys.delete(stream);
    }
    if (next !== undefined) {
      this.#keys.set(stream, next);
      const streams = this.#streams.get(next);
      if (streams) streams.add(stream);
      else this.#streams.set(next, new Set([stream]));
    }
  }

  /** Forgets every stream. */
  clear(): void {
    this.#streams.clear();
    this.#keys.clear();
  }

  /** The live session streams carrying `key`, in name order. */
  streams(key: string): StreamId[] {
    return [...(this.#streams.get(key) ?? [])].sort();
  }
}
