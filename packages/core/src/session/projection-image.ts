import { createHash } from 'node:crypto';
import type { CheckpointData } from '../kernel/capabilities.js';
import type { StreamId } from '../kernel/port.js';
import { SESSION_STREAM_PREFIX } from './ids.js';
import type { CatalogState, SessionStreamState } from './model.js';
import { CATALOG_STATE_SCHEMA_VERSION, SESSION_STATE_SCHEMA_VERSION } from './reducer.js';

/** A stream's folded state and the revision it reflects. */
export interface ProjectedStream<S> {
  revision: number;
  state: S;
}

/** Which feed record a projection last applied: checked against the feed before a checkpoint is trusted. */
export interface FeedMark {
  position: number;
  streamId: StreamId;
  revision: number;
  type: string;
}

/** The cross-session projection at one feed position: what a checkpoint keeps and `SessionProjection` restores. */
export interface ProjectionImage {
  /** The last feed position applied (0: nothing yet). */
  position: number;
  /** The record at `position`; null when nothing was applied yet. */
  last: FeedMark | null;
  highestEnqueueOrder: number;
  /** Session streams with their summary state (no log entries). */
  sessions: readonly (readonly [StreamId, ProjectedStream<SessionStreamState>])[];
  catalog: ProjectedStream<CatalogState>;
}

/** The checkpoint name the service saves its projection under. */
export const PROJECTION_CHECKPOINT_NAME = 'session-projection';

const FORMAT = 'sessionfold.session-projection';

/**
 * Bumped whenever the checkpoint's layout or the projection's meaning changes; the reducers' state versions are
 * recorded beside it, so a checkpoint written under other reducers is rebuilt too.
 */
export const PROJECTION_CHECKPOINT_VERSION = 1;

/** Sessions serialised between two yields to the event loop, so a save never holds it for long. */
const SESSIONS_PER_SLICE = 2000;

interface Header {
  format: typeof FORMAT;
  version: number;
  sessionStateVersion: number;
  catalogStateVersion: number;
  storeId: string;
  position: number;
  last: FeedMark | null;
  highestEnqueueOrder: number;
  sessions: number;
  sha256: string;
}

/** Why a checkpoint was not used: the projection is then rebuilt from the feed. */
export type CheckpointIgnoredReason = 'missing' | 'unreadable' | 'damaged' | 'version' | 'store' | 'beyond_feed' | 'other_history';

/** A checkpoint that cannot be used, and why. */
export interface RefusedCheckpoint {
  reason: CheckpointIgnoredReason;
  message: string;
}

/**
 * The checkpoint bytes of `image`: a header line (format, versions, store id, position, sha256 of the body) and a
 * JSON body, UTF-8. Serialised a slice of sessions at a time, yielding in between; the image must not change
 * meanwhile. Bytes rather than text: a slot stores and checks them without converting them.
 */
export async function encodeProjectionImage(image: ProjectionImage, storeId: string): Promise<Uint8Array> {
  const hash = createHash('sha256');
  const parts: string[] = [];
  const add = (part: string) => {
    hash.update(part);
    parts.push(part);
  };
  add(`{"catalog":${JSON.stringify(image.catalog)},"sessions":[`);
  for (let from = 0; from < image.sessions.length; from += SESSIONS_PER_SLICE) {
    if (from > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const slice = image.sessions.slice(from, from + SESSIONS_PER_SLICE);
    add((from > 0 ? ',' : '') + slice.map(([stream, { revision, state }]) => JSON.stringify([stream, revision, state])).join(','));
  }
  add(']}');
  const header: Header = {
    format: FORMAT,
    version: PROJECTION_CHECKPOINT_VERSION,
    sessionStateVersion: SESSION_STATE_SCHEMA_VERSION,
    catalogStateVersion: CATALOG_STATE_SCHEMA_VERSION,
    storeId,
    position: image.position,
    last: image.last,
    highestEnqueueOrder: image.highestEnqueueOrder,
    sessions: image.sessions.length,
    sha256: hash.digest('hex'),
  };
  return Buffer.from(`${JSON.stringify(header)}\n${parts.join('')}`, 'utf8');
}

/**
 * The image kept in checkpoint `data`, or why it cannot be used. Never throws: damage, another version or another
 * store's id are refusals. The body is checked by its sha256 and by its shape, but not field by field with a
 * schema: that would cost more than the rest of the load.
 */
export function decodeProjectionImage(data: CheckpointData, storeId: string): ProjectionImage | RefusedCheckpoint {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const end = bytes.indexOf(0x0a);
  if (end < 0) return damaged('the header line has no newline');
  let header: Partial<Header>;
  try {
    header = JSON.parse(bytes.toString('utf8', 0, end)) as Partial<Header>;
  } catch {
    return damaged('the header line is not JSON');
  }
  if (typeof header !== 'object' || header === null || header.format !== FORMAT) return damaged('the header names another format');
  if (
    header.version !== PROJECTION_CHECKPOINT_VERSION ||
    header.sessionStateVersion !== SESSION_STATE_SCHEMA_VERSION ||
    header.catalogStateVersion !== CATALOG_STATE_SCHEMA_VERSION
  ) {
    return {
      reason: 'version',
      message: `checkpoint version ${String(header.version)} (session state ${String(header.sessionStateVersion)}, catalog state ${String(header.catalogStateVersion)}); this service reads ${PROJECTION_CHECKPOINT_VERSION} (${SESSION_STATE_SCHEMA_VERSION}, ${CATALOG_STATE_SCHEMA_VERSION})`,
    };
  }
  if (header.storeId !== storeId) return { reason: 'store', message: `the checkpoint was saved in store ${String(header.storeId)}, not ${storeId}` };
  const { position, highestEnqueueOrder, last } = header;
  if (!wholeNumber(position) || !wholeNumber(highestEnqueueOrder) || !validMark(last, position)) return damaged('the header is not well-formed');
  if (
    createHash('sha256')
      .update(bytes.subarray(end + 1))
      .digest('hex') !== header.sha256
  )
    return damaged('the body does not match its sha256');
  let parsed: { catalog?: unknown; sessions?: unknown };
  try {
    parsed = JSON.parse(bytes.toString('utf8', end + 1)) as typeof parsed;
  } catch {
    return damaged('the body is not JSON');
  }
  const catalog = parsed.catalog as ProjectedStream<CatalogState> | undefined;
  if (!isProjected(catalog) || !Array.isArray(catalog.state.receipts) || !catalog.state.receipts.every(isReceipt))
    return damaged('the catalog is not well-formed');
  if (!Array.isArray(parsed.sessions) || parsed.sessions.length !== header.sessions) return damaged('the session list is not well-formed');
  const sessions = new Array<readonly [StreamId, ProjectedStream<SessionStreamState>]>(parsed.sessions.length);
  for (let index = 0; index < parsed.sessions.length; index++) {
    const entry: unknown = parsed.sessions[index];
    if (!Array.isArray(entry) || entry.length !== 3) return damaged(`session entry ${index} is not well-formed`);
    const [stream, revision, state] = entry as [unknown, unknown, SessionStreamState];
    if (typeof stream !== 'string' || !stream.startsWith(SESSION_STREAM_PREFIX) || !wholeNumber(revision) || !plausibleSession(state)) {
      return damaged(`session entry ${index} is not well-formed`);
    }
    sessions[index] = [stream, { revision, state }];
  }
  return { position, last: last ?? null, highestEnqueueOrder, sessions, catalog };
}

function damaged(message: string): RefusedCheckpoint {
  return { reason: 'damaged', message };
}

function wholeNumber(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isProjected(value: unknown): value is ProjectedStream<Record<string, unknown>> {
  return isObject(value) && wholeNumber(value['revision']) && isObject(value['state']);
}

function validMark(mark: unknown, position: number): mark is FeedMark | null | undefined {
  if (mark === null || mark === undefined) return position === 0;
  return (
    isObject(mark) && mark['position'] === position && typeof mark['streamId'] === 'string' && wholeNumber(mark['revision']) && typeof mark['type'] === 'string'
  );
}

function isReceipt(receipt: unknown): boolean {
  return isObject(receipt) && typeof receipt['sessionObjectId'] === 'string';
}

/** The fields the projection's queries read without looking further, so a forged entry cannot make them throw. */
function plausibleSession(state: unknown): state is SessionStreamState {
  if (!isObject(state) || typeof state['sessionId'] !== 'string' || !Array.isArray(state['commands']) || !Array.isArray(state['log'])) return false;
  const record = state['record'];
  if (record !== null && (!isObject(record) || typeof record['phase'] !== 'string' || typeof record['updatedAt'] !== 'string')) return false;
  if (state['receipt'] !== null && !isReceipt(state['receipt'])) return false;
  for (const command of state['commands'] as unknown[]) {
    if (
      !isObject(command) ||
      typeof command['id'] !== 'string' ||
      typeof command['sessionId'] !== 'string' ||
      typeof command['createdAt'] !== 'string' ||
      typeof command['status'] !== 'string' ||
      typeof command['sequence'] !== 'number' ||
      typeof command['enqueueOrder'] !== 'number'
    ) {
      return false;
    }
  }
  return true;
}
