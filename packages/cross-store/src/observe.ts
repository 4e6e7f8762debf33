import type { RecordedEvent } from '@sessionfold/core';

/** How a call ended, in a form that compares with `toEqual` and prints readably. */
export type Outcome = { ok: unknown } | { error: ErrorObservation };

/** A rejection as a caller sees it: class name, stable code and text (never the store-specific `cause`). */
export interface ErrorObservation {
  name: string;
  code: string | null;
  message: string;
}

/**
 * A value with every `Uint8Array` replaced by `{ bytes: <hex> }` and `undefined` members dropped, so two
 * results compare by content whatever buffer class or object identity a store handed back.
 */
export function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return { bytes: Buffer.from(value).toString('hex') };
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null) {
    const output: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (item !== undefined) output[key] = plain(item);
    return output;
  }
  return value === undefined ? null : value;
}

/** The observable part of an error: name, `code` when the error has one, message. */
export function errorObservation(error: unknown): ErrorObservation {
  if (!(error instanceof Error)) return { name: typeof error, code: null, message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { name: error.constructor.name, code: typeof code === 'string' ? code : null, message: error.message };
}

/** Runs `action` and records its result or its rejection; `onError` also sees the rejection itself. */
export async function observe(action: () => Promise<unknown>, onError?: (error: unknown) => void): Promise<Outcome> {
  try {
    return { ok: plain(await action()) };
  } catch (error) {
    onError?.(error);
    return { error: errorObservation(error) };
  }
}

/** The chain of causes under an error, one line each: what a store-specific failure really was. */
export function causeChain(error: unknown): string {
  const lines: string[] = [];
  let current: unknown = (error as { cause?: unknown } | undefined)?.cause;
  while (current !== undefined && lines.length < 5) {
    lines.push(current instanceof Error ? `${current.constructor.name}: ${current.message}` : String(current));
    current = (current as { cause?: unknown } | null)?.cause;
  }
  return lines.join(' <- ');
}

/** A change-feed record without what legitimately differs between stores: its position and commit time. */
export type FeedEntry = Omit<RecordedEvent, 'position' | 'recordedAt'>;

/** Strips `position` and `recordedAt` from a change-feed record. */
export function feedEntry(record: RecordedEvent): FeedEntry {
  const { position: _position, recordedAt: _recordedAt, ...rest } = record;
  return plain(rest) as FeedEntry;
}
