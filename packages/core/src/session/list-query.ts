import { z } from 'zod';
import type { StreamId } from '../kernel/port.js';
import { isOpenCommand } from './decisions.js';
import type { inputSchemas } from './inputs.js';
import { phaseSchema, type SessionStreamState } from './model.js';
import type { ProjectedStream } from './projection-image.js';
import type { CompletionReceipt, LifecycleRecord, Phase } from './types.js';

/** The columns a session listing sorts by. */
export const LIST_SORT_KEYS = ['id', 'phase', 'sessionType', 'version', 'startedAt', 'lastActivityAt', 'openCommands', 'failureCount'] as const;
/** A column a session listing sorts by. */
export type ListSortKey = (typeof LIST_SORT_KEYS)[number];

const MAX_PAGE = 1000;

/** The input of `listPage` (`inputSchemas.listPage`). */
export const listQuerySchema = z
  .object({
    phase: phaseSchema.optional(),
    sessionType: z.string().min(1).max(255).optional(),
    search: z.string().max(255).optional(),
    sort: z.enum(LIST_SORT_KEYS).default('lastActivityAt'),
    order: z.enum(['asc', 'desc']).default('desc'),
    limit: z.number().int().min(1).max(MAX_PAGE).default(100),
    cursor: z
      .string()
      .regex(/^(0|[1-9][0-9]{0,8})$/, 'expected the nextCursor of an earlier page')
      .optional(),
  })
  .default({ sort: 'lastActivityAt', order: 'desc', limit: 100 });
/**
 * Input of `listPage`: filters (`phase`, `sessionType`, and `search`, a case-insensitive part of a session id,
 * idempotency key or session object id), one sort column (`sort`, default `lastActivityAt`, ties ordered by id;
 * `order`, default `desc`), and a page (`limit`, 1..1000 rows, default 100; `cursor`, the previous page's `nextCursor`).
 */
export type ListQueryInput = NonNullable<z.input<typeof inputSchemas.listPage>>;

/** One row of a session listing: a live session, or a completed one known by its receipt (`receipt: true`). */
export interface SessionListRow {
  id: string;
  phase: Phase;
  sessionType: string | null;
  version: number;
  startedAt: string;
  lastActivityAt: string;
  openCommands: number;
  failureCount: number;
  /** The key of the start that created the session (null: registered, or known by its receipt). */
  idempotencyKey: string | null;
  sessionObjectId: string | null;
  receipt: boolean;
}

/** One page of a session listing: `total` rows match, `nextCursor` asks for the next page (null: this is the last). */
export interface SessionPage {
  sessions: SessionListRow[];
  total: number;
  nextCursor: string | null;
}

/** Where the projection's listing comes from: every session stream and the catalog's receipts. */
export interface ListSource {
  sessions: Iterable<[StreamId, ProjectedStream<SessionStreamState>]>;
  receipts: readonly CompletionReceipt[];
}

/**
 * What a listing shows, the one rule `list()` and `listPage` share: every session's state, except a completed one
 * handed to the catalog (its receipt stands for it once recorded), then every receipt no kept session stands for.
 */
export function* listedEntries(
  source: ListSource,
): Generator<
  { state: SessionStreamState; record: LifecycleRecord; receipt?: undefined } | { receipt: CompletionReceipt; state?: undefined; record?: undefined }
> {
  const archived = new Set(source.receipts.map((receipt) => receipt.sessionObjectId));
  const listedObjects = new Set<string>();
  for (const [, projected] of source.sessions) {
    const { record, receipt, kept } = projected.state;
    if (!record || (record.phase === 'complete' && kept !== true && receipt && archived.has(receipt.sessionObjectId))) continue;
    if (receipt && kept === true) listedObjects.add(receipt.sessionObjectId);
    yield { state: projected.state, record };
  }
  for (const receipt of source.receipts) if (!listedObjects.has(receipt.sessionObjectId)) yield { receipt };
}

/**
 * The page of `source` that `query` asks for: the same sessions and receipts `list()` returns, filtered, sorted by
 * one column (ties by id) and cut at `limit`. Rows are built without copying any session's state.
 */
export function listPage(source: ListSource, query: z.output<typeof listQuerySchema>): SessionPage {
  // A cursor is the offset of the page's first row, as decimal digits (checked by the schema).
  const offset = query.cursor === undefined ? 0 : Number(query.cursor);
  const search = query.search?.toLowerCase();
  const direction = query.order === 'asc' ? 1 : -1;
  const key = query.sort;
  const before = (a: SessionListRow, b: SessionListRow): number => direction * (compare(a[key], b[key]) || compare(a.id, b.id));
  // The rows up to the end of the asked page, in order: a first page over 100,000 sessions keeps 100 rows, and
  // most rows are turned away by one comparison with the last kept instead of taking part in a full sort.
  const wanted = offset + query.limit;
  const ranked = new RankedRows(wanted, before);
  let total = 0;
  const keep = (row: SessionListRow): void => {
    if (query.phase !== undefined && row.phase !== query.phase) return;
    if (query.sessionType !== undefined && row.sessionType !== query.sessionType) return;
    if (search !== undefined && search !== '' && !matches(row, search)) return;
    total++;
    ranked.offer(row);
  };
  for (const entry of listedEntries(source)) {
    if (entry.receipt !== undefined) {
      const { receipt } = entry;
      keep({
        id: receipt.sessionObjectId,
        phase: 'complete',
        sessionType: receipt.sessionType,
        version: 1,
        startedAt: receipt.createdAt ?? '',
        lastActivityAt: receipt.committedAt ?? '',
        openCommands: 0,
        failureCount: 0,
        idempotencyKey: null,
        sessionObjectId: receipt.sessionObjectId,
        receipt: true,
      });
      continue;
    }
    const { record, state } = entry;
    const control = record.state;
    let openCommands = 0;
    for (const command of state.commands) if (isOpenCommand(command)) openCommands++;
    keep({
      id: record.id,
      phase: record.phase,
      sessionType: typeof control['sessionType'] === 'string' ? control['sessionType'] : null,
      version: record.version,
      startedAt: record.startedAt,
      lastActivityAt: state.lastActivityAt ?? record.updatedAt,
      openCommands,
      failureCount: record.ingressFailureCount,
      idempotencyKey: state.startKey,
      sessionObjectId: typeof control['sessionObjectId'] === 'string' ? control['sessionObjectId'] : (state.receipt?.sessionObjectId ?? null),
      receipt: false,
    });
  }
  const rows = ranked.rows();
  return { sessions: rows.slice(offset, wanted), total, nextCursor: wanted < total ? String(wanted) : null };
}

/** Keeps the first `limit` rows by `before`: a sorted array for a page near the start, else all rows sorted once at the end. */
class RankedRows {
  readonly #kept: SessionListRow[] = [];
  readonly #bounded: boolean;
  #sorted = true;

  constructor(
    readonly limit: number,
    readonly before: (a: SessionListRow, b: SessionListRow) => number,
  ) {
    // Inserting into a sorted array costs up to its length per row: past a few pages, one sort is cheaper.
    this.#bounded = limit <= 2000;
  }

  offer(row: SessionListRow): void {
    const kept = this.#kept;
    if (!this.#bounded) {
      kept.push(row);
      this.#sorted = false;
      return;
    }
    if (kept.length === this.limit && this.before(row, kept[kept.length - 1] as SessionListRow) >= 0) return;
    let low = 0;
    let high = kept.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.before(kept[middle] as SessionListRow, row) <= 0) low = middle + 1;
      else high = middle;
    }
    kept.splice(low, 0, row);
    if (kept.length > this.limit) kept.pop();
  }

  rows(): SessionListRow[] {
    if (!this.#sorted) this.#kept.sort(this.before);
    this.#sorted = true;
    return this.#kept;
  }
}

function matches(row: SessionListRow, search: string): boolean {
  return [row.id, row.idempotencyKey, row.sessionObjectId].some((text) => text?.toLowerCase().includes(search));
}

function compare(a: string | number | boolean | null, b: string | number | boolean | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}
