import pg from 'pg';
import type { QueryArrayConfig, QueryConfig } from 'pg';
import { Kind, quoted } from './schema.js';

/** The columns of the kernel's `EventRow`, in its order, for a SELECT on `events AS e`. */
const EVENT_COLUMNS = 'e.position, e.stream, e.revision, e.type, e.data, e.event_id, e.recorded_at, e.schema_version';

/**
 * Rows of the first page of a read or of the feed, and of each page of the stream list: small, so a reader that
 * is nearly caught up pays little for its first answer.
 */
export const PAGE_SIZE = 512;
/** Rows of each later page of a read or of the feed: a long read pays a round trip per page, memory stays bounded. */
export const LATER_PAGE_SIZE = 4096;

const identity = (text: string) => text;
/**
 * How the store's queries read values: bigint as a number (positions and revisions stay far below 2^53) and
 * json as its text, parsed only when a consumer reaches the event.
 */
export const queryTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === 20) return Number;
    if (oid === 114) return identity;
    return pg.types.getTypeParser(oid, format);
  }) as typeof pg.types.getTypeParser,
};

/** A statement prepared once per connection under `name` (per schema, since the text names the schema). */
type Statement = (values: unknown[]) => QueryConfig;
type ArrayStatement = (values: unknown[]) => QueryArrayConfig;

const named =
  (name: string, text: string): Statement =>
  (values) => ({ name, text, values, types: queryTypes });
const namedArray =
  (name: string, text: string): ArrayStatement =>
  (values) => ({ name, text, values, types: queryTypes, rowMode: 'array' });

/** Every statement the store runs on `schema`. */
export type Queries = ReturnType<typeof queriesFor>;

/** Builds the store's statements for `schema` (a checked identifier). */
export function queriesFor(schema: string) {
  const S = quoted(schema);
  const n = (name: string) => `sessionfold_${schema}_${name}`;
  return {
    /** (streams[], expected[], counts[], types[], data[], ids[], versions[], recordedAt) → { status, revision, pos } per batch */
    appendBatches: named(
      n('append'),
      `SELECT status, revision, pos FROM ${S}.append_batches($1::text[], $2::bigint[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::integer[], $8::text)`,
    ),
    /** (streams[]) → { stream, revision } for each of them that was deleted at some time (a `$deleted` record of it is kept) */
    deletedAmong: named(
      n('deleted_among'),
      `SELECT d.stream, coalesce((SELECT s.revision FROM ${S}.streams AS s WHERE s.stream = d.stream), 0) AS revision
       FROM (SELECT DISTINCT r.stream FROM ${S}.events AS r WHERE r.kind = ${Kind.deleted} AND r.stream = ANY ($1::text[])) AS d`,
    ),
    /** (stream, revision, snapshotJson, recordedAt) → { status, dropped } */
    compact: named(n('compact_counted'), `SELECT status, dropped FROM ${S}.compact_stream($1, $2, $3, $4)`),
    /** (stream, revision, snapshotJson, recordedAt) → { status, value } */
    restore: named(n('restore'), `SELECT status, value FROM ${S}.restore_stream($1, $2, $3, $4)`),
    /** (stream, expected, recordedAt) → { matched, head } */
    deleteStream: named(n('delete'), `SELECT matched, head FROM ${S}.delete_stream($1, $2, $3)`),
    /**
     * (stream, fromRevision) → [head, maxPosition, snapshot revision | null, snapshot data | null, ...EventRow | nulls]: the
     * revision, the snapshot record and the first page of events, from one statement, so they agree.
     */
    readFirst: namedArray(
      n('read_first'),
      `SELECT h.head, h.bound, snap.revision, snap.data, ${EVENT_COLUMNS}
       FROM (SELECT coalesce((SELECT s.revision FROM ${S}.streams AS s WHERE s.stream = $1), 0) AS head,
                    (SELECT f.position FROM ${S}.feed_head AS f) AS bound) AS h
       LEFT JOIN LATERAL (SELECT r.revision, r.data FROM ${S}.events AS r
                          WHERE r.stream = $1 AND r.kind <> ${Kind.event} AND r.kind = ${Kind.snapshot} AND r.revision >= $2) AS snap ON h.head > 0
       LEFT JOIN LATERAL (SELECT ${EVENT_COLUMNS} FROM ${S}.events AS e
                          WHERE e.stream = $1 AND e.kind = ${Kind.event} AND e.revision >= $2
                          ORDER BY e.revision LIMIT ${PAGE_SIZE}) AS e ON h.head > 0
       ORDER BY e.revision`,
    ),
    /** (offset, type, recordedAt, stream, fromRevision, toRevision, maxPosition) → StreamPageColumns (see `StreamPageRows`) */
    streamPage: namedArray(
      n('stream_page'),
      `SELECT e.revision, e.data, NULLIF(e.position - e.revision, $1), NULLIF(e.type, $2), NULLIF(e.recorded_at, $3), e.event_id, NULLIF(e.schema_version, 1)
       FROM ${S}.events AS e
       WHERE e.stream = $4 AND e.kind = ${Kind.event} AND e.revision >= $5 AND e.revision <= $6 AND e.position <= $7
       ORDER BY e.revision LIMIT ${LATER_PAGE_SIZE}`,
    ),
    /** (stream) → revision (0 when missing) */
    head: named(n('head'), `SELECT coalesce((SELECT s.revision FROM ${S}.streams AS s WHERE s.stream = $1), 0) AS revision`),
    /**
     * (fromPosition) → [bound, ...EventRow | nulls]: the last position now and the first page from fromPosition.
     * The pages have no upper bound in SQL, only `position >=` and a LIMIT: that keeps the plan an ordered scan
     * of the primary key whatever the statistics say (with both bounds, a table not yet analysed got a bitmap
     * scan of the whole range and a sort, per page). The reader drops what lies past its bound. The counter is
     * read as a scalar subquery, not joined as a table: the planner knows nothing of the one-row table's size and
     * guessed thousands of rows, a cost past `jit_above_cost`, so every feed read compiled itself (35–390 ms).
     */
    feedFirst: namedArray(
      n('feed_first'),
      `SELECT h.bound, ${EVENT_COLUMNS} FROM (SELECT (SELECT f.position FROM ${S}.feed_head AS f) AS bound) AS h
       LEFT JOIN LATERAL (SELECT ${EVENT_COLUMNS} FROM ${S}.events AS e WHERE e.position >= $1
                          ORDER BY e.position LIMIT ${PAGE_SIZE}) AS e ON e.position <= h.bound
       ORDER BY e.position`,
    ),
    /** (fromPosition) → EventRow */
    feedPage: namedArray(n('feed_page'), `SELECT ${EVENT_COLUMNS} FROM ${S}.events AS e WHERE e.position >= $1 ORDER BY e.position LIMIT ${LATER_PAGE_SIZE}`),
    /** (fromName) → [stream, revision], names ≥ fromName */
    streamsFrom: namedArray(n('streams_from'), `SELECT s.stream, s.revision FROM ${S}.streams AS s WHERE s.stream >= $1 ORDER BY s.stream LIMIT ${PAGE_SIZE}`),
    /** (afterName) → [stream, revision], names > afterName */
    streamsAfter: namedArray(n('streams_after'), `SELECT s.stream, s.revision FROM ${S}.streams AS s WHERE s.stream > $1 ORDER BY s.stream LIMIT ${PAGE_SIZE}`),
    /**
     * (stream, sha256, bytes). `DO UPDATE` rather than `DO NOTHING`: it locks the blob's row, so a deletion of
     * another owner that is in progress either sees this owner or has removed the row, which this then writes again.
     */
    putBlob: named(
      n('put_blob'),
      `WITH b AS (INSERT INTO ${S}.blobs AS b (sha256, bytes) VALUES ($2, $3) ON CONFLICT (sha256) DO UPDATE SET sha256 = excluded.sha256 RETURNING b.sha256)
       INSERT INTO ${S}.blob_owners (stream, sha256) SELECT $1, b.sha256 FROM b ON CONFLICT DO NOTHING`,
    ),
    /**
     * () → [lastPosition, pid | null, ageMs, state, waiting]: the feed counter, and every transaction holding it (each
     * write takes it; a long-held one stalls every writer), oldest first, with how many sessions wait for it. A write
     * waiting for the counter also holds a lock on its table, but is itself blocked: it is left out.
     */
    status: namedArray(
      n('status'),
      `SELECT f.position, a.pid, (extract(epoch FROM clock_timestamp() - a.xact_start) * 1000)::bigint, a.state,
              (SELECT count(*) FROM pg_stat_activity AS w WHERE a.pid = ANY (pg_blocking_pids(w.pid)))
       FROM ${S}.feed_head AS f
       LEFT JOIN pg_locks AS l ON l.locktype = 'relation' AND l.relation = '${S}.feed_head'::regclass AND l.granted
                              AND l.mode = 'RowShareLock' AND l.pid <> pg_backend_pid() AND cardinality(pg_blocking_pids(l.pid)) = 0
       LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
       ORDER BY a.xact_start`,
    ),
    /**
     * () → [schema version, events bytes, blobs bytes, total bytes, streams (estimate), events (estimate), streams
     * with a snapshot, revisions their snapshots cover]: the last two from the snapshot records alone (their index).
     */
    details: namedArray(
      n('details'),
      `SELECT (SELECT v.version FROM ${S}.schema_version AS v), pg_total_relation_size('${S}.events'), pg_total_relation_size('${S}.blobs'),
              (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class AS c
               WHERE c.relnamespace = '${S}'::regnamespace AND c.relkind IN ('r', 'm')),
              greatest((SELECT c.reltuples FROM pg_class AS c WHERE c.oid = '${S}.streams'::regclass), 0)::bigint,
              greatest((SELECT c.reltuples FROM pg_class AS c WHERE c.oid = '${S}.events'::regclass), 0)::bigint,
              snapshots.streams, snapshots.revisions
       FROM (SELECT count(*) AS streams, coalesce(sum(e.revision), 0)::bigint AS revisions FROM ${S}.events AS e
             WHERE e.kind <> ${Kind.event} AND e.kind = ${Kind.snapshot}) AS snapshots`,
    ),
    /** () → id */
    storeId: namedArray(n('store_id'), `SELECT i.id FROM ${S}.store_identity AS i`),
    /** (name) → [storeId, isText, inflatedSize | null, data] */
    loadCheckpoint: namedArray(n('load_checkpoint'), `SELECT c.store_id, c.is_text, c.inflated_size, c.data FROM ${S}.checkpoints AS c WHERE c.name = $1`),
    /** (name, storeId, isText, inflatedSize | null, data): replaces the row in one statement, so atomically. */
    saveCheckpoint: named(
      n('save_checkpoint'),
      `INSERT INTO ${S}.checkpoints (name, store_id, is_text, inflated_size, data) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (name) DO UPDATE SET store_id = excluded.store_id, is_text = excluded.is_text, inflated_size = excluded.inflated_size, data = excluded.data`,
    ),
    /** (sha256) → bytes */
    blobBytes: namedArray(n('blob_bytes'), `SELECT b.bytes FROM ${S}.blobs AS b WHERE b.sha256 = $1`),
    /** (stream) → sha256 */
    ownedBlobs: namedArray(n('owned_blobs'), `SELECT o.sha256 FROM ${S}.blob_owners AS o WHERE o.stream = $1 ORDER BY o.sha256 COLLATE "C"`),
  };
}
