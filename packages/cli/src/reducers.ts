import type { StreamReducer } from '@sessionfold/core/kernel';
import { CATALOG_STREAM, SESSION_STREAM_PREFIX, START_KEY_STREAM_PREFIX, catalogReducer, sessionReducer, startKeyReducer } from '@sessionfold/core/session';

/** The reducer that folds `stream`, for the streams the session service writes; undefined for any other stream. */
export function reducerOf(stream: string): StreamReducer<unknown> | undefined {
  if (stream.startsWith(SESSION_STREAM_PREFIX)) return sessionReducer as StreamReducer<unknown>;
  if (stream.startsWith(START_KEY_STREAM_PREFIX)) return startKeyReducer as StreamReducer<unknown>;
  if (stream === CATALOG_STREAM) return catalogReducer as StreamReducer<unknown>;
  return undefined;
}

/** JSON with object keys sorted, so two equal values print the same whatever order their keys were built in. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}
