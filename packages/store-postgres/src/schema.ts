import { createHash } from 'node:crypto';
import { StorageError } from '@sessionfold/core/kernel';
import type { PoolClient } from 'pg';
import type { PgPool } from './pool.js';

/** The schema version this release writes; the row of `schema_version` in a migrated schema. */
export const SCHEMA_VERSION = 4;

/** Marks rows of `events`: application events and the two kinds of change-feed records. */
export const Kind = { event: 0, snapshot: 1, deleted: 2 } as const;

/** First key of the advisory lock migrations take ("SFol"); the second is the hash of the schema name. */
const MIGRATION_LOCK = 0x53466f6c;

/** `"name"`: the schema name is checked against a strict pattern first, quoting is belt and braces. */
export const quoted = (schema: string): string => `"${schema}"`;

/**
 * The NOTIFY channel every commit that adds to `schema`'s feed signals on. Hashed: a channel name is at most
 * 63 bytes, as long as the schema name alone, and must not meet another application's channels.
 */
export const feedChannel = (schema: string): string => `sessionfold_${createHash('sha256').update(schema).digest('hex').slice(0, 32)}`;

/**
 * Forward migrations: entry `n` takes a schema from version `n` to `n + 1`. Never change what a released entry
 * leaves behind; append a new one, so every older schema is brought to the same place. (An entry may stop
 * creating a function that a later entry replaces outright: the end is the same from every version.) `S` is
 * the quoted schema name, `channel` its `feedChannel`.
 */
const MIGRATIONS: ReadonlyArray<(S: string, channel: string) => string> = [
  (S) => `
  CREATE TABLE ${S}.schema_version (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  integer NOT NULL
  );

  -- The change feed's counter: the last position handed out. Every writing transaction locks this row first
  -- and keeps it until it commits, so positions are handed out in commit order, without gaps, and one lock
  -- order holds for every writer (no deadlocks between writes that touch several streams).
  CREATE TABLE ${S}.feed_head (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    position bigint  NOT NULL
  );
  INSERT INTO ${S}.feed_head (position) VALUES (0);

  -- One row per existing stream: its revision. COLLATE "C" orders names by code unit, as the port lists them.
  CREATE TABLE ${S}.streams (
    stream   text COLLATE "C" PRIMARY KEY,
    revision bigint NOT NULL CHECK (revision >= 1)
  );

  -- The change feed and the streams' events in one table, by position. kind 0 rows are events, kind 1 is a
  -- stream's $snapshot record (data = the snapshot, its only copy), kind 2 a $deleted record. data is the
  -- exact JSON text the port serialised: json, not jsonb, which would reorder keys and refuse \\u0000.
  CREATE TABLE ${S}.events (
    position    bigint   PRIMARY KEY,
    stream      text     COLLATE "C" NOT NULL,
    kind        smallint NOT NULL,
    revision    bigint   NOT NULL,
    type        text     NOT NULL,
    data        json     NOT NULL,
    event_id    text,
    -- revision of the last event of the append that carried event_id: an idempotent retry answers with it
    batch_end   bigint,
    recorded_at text     NOT NULL,
    -- the version of data's shape the event was appended with; 1 for $snapshot and $deleted records
    schema_version integer NOT NULL DEFAULT 1
  );
  CREATE UNIQUE INDEX events_by_revision ON ${S}.events (stream, revision) WHERE kind = ${Kind.event};
  CREATE UNIQUE INDEX events_by_event_id ON ${S}.events (stream, event_id) WHERE event_id IS NOT NULL;
  CREATE INDEX events_records ON ${S}.events (stream, kind) WHERE kind <> ${Kind.event};

  -- Content-addressed bytes, kept while at least one stream owns them.
  CREATE TABLE ${S}.blobs (
    sha256 text  PRIMARY KEY,
    bytes  bytea NOT NULL
  );
  CREATE TABLE ${S}.blob_owners (
    stream text COLLATE "C" NOT NULL,
    sha256 text NOT NULL,
    PRIMARY KEY (stream, sha256)
  );
  CREATE INDEX blob_owners_by_sha256 ON ${S}.blob_owners (sha256);

  ${WRITE_FUNCTIONS(S)}`,
  (S, channel) => `
  -- The store's identity, made once when the schema gets this table: checkpoints are bound to it, so those
  -- copied in from another store's schema are not taken for this one's.
  CREATE TABLE ${S}.store_identity (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    id       text    NOT NULL
  );
  INSERT INTO ${S}.store_identity (id) VALUES (gen_random_uuid()::text);

  -- Projection checkpoints: not events, so outside the feed and its counter. is_text keeps the kind save was
  -- given (text is kept as its UTF-8 bytes); store_id is the identity the checkpoint was saved under.
  CREATE TABLE ${S}.checkpoints (
    name     text    COLLATE "C" PRIMARY KEY,
    store_id text    NOT NULL,
    is_text  boolean NOT NULL,
    data     bytea   NOT NULL
  );

  -- Every statement that adds to the feed tells listeners so; NOTIFY is delivered at commit, and only then, so
  -- a follower woken by it finds the change visible. It is a hint: followers also poll.
  CREATE FUNCTION ${S}.notify_feed() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    PERFORM pg_notify(TG_ARGV[0], '');
    RETURN NULL;
  END
  $fn$;
  CREATE TRIGGER feed_changed AFTER INSERT ON ${S}.events FOR EACH STATEMENT EXECUTE FUNCTION ${S}.notify_feed('${channel}');

  -- compact_stream now also answers how many events it dropped, for the store's observer.
  DROP FUNCTION IF EXISTS ${S}.compact_stream(text, bigint, text, text);
  CREATE FUNCTION ${S}.compact_stream(p_stream text, p_revision bigint, p_snapshot text, p_at text)
  RETURNS TABLE (status smallint, dropped bigint)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_last    bigint;
    v_head    bigint;
    v_kept    bigint;
    v_dropped bigint;
  BEGIN
    SELECT f.position INTO v_last FROM ${S}.feed_head AS f FOR UPDATE;
    SELECT s.revision INTO v_head FROM ${S}.streams AS s WHERE s.stream = p_stream FOR UPDATE;
    IF v_head IS NULL THEN RETURN QUERY SELECT 1::smallint, 0::bigint; RETURN; END IF;
    IF p_revision > v_head THEN RETURN QUERY SELECT 2::smallint, 0::bigint; RETURN; END IF;
    SELECT e.revision INTO v_kept FROM ${S}.events AS e WHERE e.stream = p_stream AND e.kind <> ${Kind.event} AND e.kind = ${Kind.snapshot};
    IF v_kept IS NOT NULL AND p_revision < v_kept THEN RETURN QUERY SELECT 3::smallint, 0::bigint; RETURN; END IF;
    v_last := v_last + 1;
    DELETE FROM ${S}.events AS e WHERE e.stream = p_stream AND e.kind = ${Kind.event} AND e.revision <= p_revision;
    GET DIAGNOSTICS v_dropped = ROW_COUNT;
    DELETE FROM ${S}.events AS e WHERE e.stream = p_stream AND e.kind <> ${Kind.event} AND e.kind = ${Kind.snapshot};
    INSERT INTO ${S}.events (position, stream, kind, revision, type, data, recorded_at)
      VALUES (v_last, p_stream, ${Kind.snapshot}, p_revision, '$snapshot', p_snapshot::json, p_at);
    UPDATE ${S}.feed_head SET position = v_last;
    RETURN QUERY SELECT 0::smallint, v_dropped;
  END
  $fn$;`,
  // Checkpoints may be kept deflated (inflated_size is then their size, else null): a projection's is megabytes
  // of JSON, and sending it costs by the byte. EXTERNAL: what is deflated does not compress again.
  (S) => `
  ALTER TABLE ${S}.checkpoints ADD COLUMN inflated_size bigint CHECK (inflated_size >= 0);
  ALTER TABLE ${S}.checkpoints ALTER COLUMN data SET STORAGE EXTERNAL;`,
  (S) => APPEND_BATCHES(S),
];

/**
 * The writes, as functions: each write is one statement, so one round trip and its own transaction (an
 * implicit one: a connection lost midway leaves nothing). Each locks the feed counter first (see feed_head).
 * `append_batches` is created by the fourth migration and `compact_stream` by the second, which replace them.
 */
const WRITE_FUNCTIONS = (S: string) => `
  -- Creates a missing stream from a snapshot. Returns (0, position) or (1, the stream's actual revision).
  CREATE FUNCTION ${S}.restore_stream(p_stream text, p_revision bigint, p_snapshot text, p_at text)
  RETURNS TABLE (status smallint, value bigint)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_last bigint;
  BEGIN
    SELECT f.position INTO v_last FROM ${S}.feed_head AS f FOR UPDATE;
    INSERT INTO ${S}.streams (stream, revision) VALUES (p_stream, p_revision) ON CONFLICT (stream) DO NOTHING;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 1::smallint, s.revision FROM ${S}.streams AS s WHERE s.stream = p_stream;
      RETURN;
    END IF;
    v_last := v_last + 1;
    INSERT INTO ${S}.events (position, stream, kind, revision, type, data, recorded_at)
      VALUES (v_last, p_stream, ${Kind.snapshot}, p_revision, '$snapshot', p_snapshot::json, p_at);
    UPDATE ${S}.feed_head SET position = v_last;
    RETURN QUERY SELECT 0::smallint, v_last;
  END
  $fn$;

  -- Deletes a stream if it is at p_expected (a revision, 0 for no stream, -1 for any): its events and
  -- records, its row, and the blobs no other stream owns, leaving one $deleted record. Returns the
  -- stream's revision before (0: nothing to delete) and whether it matched.
  CREATE FUNCTION ${S}.delete_stream(p_stream text, p_expected bigint, p_at text)
  RETURNS TABLE (matched boolean, head bigint)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_last bigint;
    v_head bigint;
  BEGIN
    SELECT f.position INTO v_last FROM ${S}.feed_head AS f FOR UPDATE;
    SELECT s.revision INTO v_head FROM ${S}.streams AS s WHERE s.stream = p_stream FOR UPDATE;
    v_head := coalesce(v_head, 0);
    IF p_expected >= 0 AND p_expected <> v_head THEN
      RETURN QUERY SELECT false, v_head;
      RETURN;
    END IF;
    IF v_head = 0 THEN
      RETURN QUERY SELECT true, 0::bigint;
      RETURN;
    END IF;
    -- Lock the blobs this stream owns before looking at their other owners: a putBlob of the same bytes
    -- for another stream locks the row too, so either it sees the blob gone and writes it again, or this
    -- sees its owner and keeps the blob.
    PERFORM 1 FROM ${S}.blobs AS b
      WHERE b.sha256 IN (SELECT o.sha256 FROM ${S}.blob_owners AS o WHERE o.stream = p_stream)
      ORDER BY b.sha256 FOR UPDATE;
    DELETE FROM ${S}.blobs AS b WHERE b.sha256 IN (
      SELECT mine.sha256 FROM ${S}.blob_owners AS mine
      WHERE mine.stream = p_stream
        AND NOT EXISTS (SELECT 1 FROM ${S}.blob_owners AS other WHERE other.sha256 = mine.sha256 AND other.stream <> p_stream));
    DELETE FROM ${S}.blob_owners AS o WHERE o.stream = p_stream;
    DELETE FROM ${S}.events AS e WHERE e.stream = p_stream;
    DELETE FROM ${S}.streams AS s WHERE s.stream = p_stream;
    v_last := v_last + 1;
    INSERT INTO ${S}.events (position, stream, kind, revision, type, data, recorded_at)
      VALUES (v_last, p_stream, ${Kind.deleted}, v_head, '$deleted', 'null', p_at);
    UPDATE ${S}.feed_head SET position = v_last;
    RETURN QUERY SELECT true, v_head;
  END
  $fn$;
`;

/**
 * Appends a group of batches in order, each decided against its stream as the batches before it left it;
 * p_counts says how many of the event arrays' entries (p_types, p_data, p_ids, p_versions: one entry per
 * event, p_versions the version of the data's shape) each batch has. p_expected: a revision, 0 for no stream,
 * -1 for any, -2 for a stream that never existed (no `$deleted` record either). One result row per batch:
 * status 0 written (revision and position of its last event), 1 a retry of an earlier append (that append's
 * result), 2 a conflict (revision = the stream's actual revision), 3 a later event id already in the stream
 * (revision = the 0-based index of that event in the batch). A batch that is refused writes nothing.
 *
 * Work per event is set-based (arrays are unnested, never subscripted per event: an element of a text array
 * is found by walking the ones before it). One query gathers, per batch, what its decision needs: its
 * stream's revision, whether the stream was deleted, and where its event ids already are (in the table, or
 * in earlier batches of the group); a loop over the batches decides them in order; three statements write.
 */
const APPEND_BATCHES = (S: string) => `
  CREATE OR REPLACE FUNCTION ${S}.append_batches(
    p_streams text[], p_expected bigint[], p_counts integer[],
    p_types text[], p_data text[], p_ids text[], p_versions integer[], p_at text)
  RETURNS TABLE (status smallint, revision bigint, pos bigint)
  -- Planned once per connection: planning its statements anew for each call cost more than running them.
  LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
  DECLARE
    v_last   bigint;
    v_base   bigint;
    v_at     bigint;
    v_bad    integer;
    r        record;
    -- Per batch, by its number: the answer, and its first event's index in the event arrays. Per stream, at
    -- the number of its first batch: its revision before (v_was) and as the batches so far left it (v_head).
    v_status smallint[] := array_fill(NULL::smallint, ARRAY[cardinality(p_streams)]);
    v_rev    bigint[] := array_fill(NULL::bigint, ARRAY[cardinality(p_streams)]);
    v_pos    bigint[] := array_fill(NULL::bigint, ARRAY[cardinality(p_streams)]);
    v_first  integer[] := array_fill(NULL::integer, ARRAY[cardinality(p_streams)]);
    v_was    bigint[] := array_fill(NULL::bigint, ARRAY[cardinality(p_streams)]);
    v_head   bigint[] := array_fill(NULL::bigint, ARRAY[cardinality(p_streams)]);
  BEGIN
    SELECT f.position INTO v_last FROM ${S}.feed_head AS f FOR UPDATE;
    v_base := v_last;
    FOR r IN
      WITH job AS (
        SELECT u.j::integer AS j, u.stream, u.expected, u.n, (sum(u.n) OVER (ORDER BY u.j) - u.n + 1)::integer AS first,
               (min(u.j) OVER (PARTITION BY u.stream))::integer AS slot
        FROM unnest(p_streams, p_expected, p_counts) WITH ORDINALITY AS u(stream, expected, n, j)),
      id AS (
        SELECT job.j, job.stream, e.id, (e.k - job.first)::integer AS i
        FROM unnest(p_ids) WITH ORDINALITY AS e(id, k)
        JOIN job ON job.j = width_bucket(e.k::integer, (SELECT array_agg(o.first ORDER BY o.j) FROM job AS o))
        WHERE e.id IS NOT NULL),
      seen AS (
        SELECT id.j, id.i, t.batch_end AS known_end, t.position + t.batch_end - t.revision AS known_pos, o.j AS prior
        FROM id
        LEFT JOIN ${S}.events AS t ON t.stream = id.stream AND t.event_id IS NOT NULL AND t.event_id = id.id
        LEFT JOIN id AS o ON o.stream = id.stream AND o.id = id.id AND o.j < id.j),
      hit AS (
        SELECT seen.j, max(seen.known_end) FILTER (WHERE seen.i = 0) AS known_end, max(seen.known_pos) FILTER (WHERE seen.i = 0) AS known_pos,
               array_agg(seen.prior) FILTER (WHERE seen.i = 0 AND seen.prior IS NOT NULL) AS first_prior,
               min(seen.i) FILTER (WHERE seen.i > 0 AND seen.known_end IS NOT NULL) AS known_later,
               array_agg(seen.i) FILTER (WHERE seen.i > 0 AND seen.prior IS NOT NULL) AS later_i,
               array_agg(seen.prior) FILTER (WHERE seen.i > 0 AND seen.prior IS NOT NULL) AS later_prior
        FROM seen GROUP BY seen.j)
      SELECT job.j, job.slot, job.expected, job.n, job.first, hit.known_end, hit.known_pos, hit.first_prior,
             hit.known_later, hit.later_i, hit.later_prior,
             CASE WHEN job.slot = job.j THEN coalesce((SELECT s.revision FROM ${S}.streams AS s WHERE s.stream = job.stream), 0) END AS was,
             job.expected = -2 AND EXISTS (SELECT 1 FROM ${S}.events AS d
                                           WHERE d.stream = job.stream AND d.kind <> ${Kind.event} AND d.kind = ${Kind.deleted}) AS deleted
      FROM job LEFT JOIN hit ON hit.j = job.j ORDER BY job.j
    LOOP
      IF r.slot = r.j THEN v_was[r.j] := r.was; v_head[r.j] := r.was; END IF;
      v_at := v_head[r.slot];
      status := NULL; revision := v_at; pos := NULL;
      IF r.deleted THEN
        status := 2;
      ELSIF r.known_end IS NOT NULL THEN
        status := 1; revision := r.known_end; pos := r.known_pos;
      ELSIF r.first_prior IS NOT NULL THEN
        -- At most one earlier batch of the group wrote the id: a second would have been refused.
        FOR k IN 1 .. cardinality(r.first_prior) LOOP
          IF v_status[r.first_prior[k]] = 0 THEN status := 1; revision := v_rev[r.first_prior[k]]; pos := v_pos[r.first_prior[k]]; END IF;
        END LOOP;
      END IF;
      IF status IS NULL THEN
        v_bad := r.known_later;
        FOR k IN 1 .. coalesce(cardinality(r.later_i), 0) LOOP
          IF v_status[r.later_prior[k]] = 0 AND (v_bad IS NULL OR r.later_i[k] < v_bad) THEN v_bad := r.later_i[k]; END IF;
        END LOOP;
        IF v_bad IS NOT NULL THEN
          status := 3; revision := v_bad;
        ELSIF r.expected = -1 OR greatest(r.expected, 0) = v_at THEN
          v_head[r.slot] := v_at + r.n; v_last := v_last + r.n;
          status := 0; revision := v_at + r.n; pos := v_last;
        ELSE
          status := 2;
        END IF;
      END IF;
      v_status[r.j] := status; v_rev[r.j] := revision; v_pos[r.j] := pos; v_first[r.j] := r.first;
      RETURN NEXT;
    END LOOP;
    IF v_last = v_base THEN RETURN; END IF;
    -- The counter is held, so nothing else moved the stream rows since they were read.
    UPDATE ${S}.streams AS s SET revision = u.now FROM unnest(p_streams, v_was, v_head) AS u(name, was, now)
      WHERE s.stream = u.name AND u.was > 0 AND u.now > u.was;
    INSERT INTO ${S}.streams (stream, revision)
      SELECT u.name, u.now FROM unnest(p_streams, v_was, v_head) AS u(name, was, now) WHERE u.was = 0 AND u.now > 0;
    -- Each event finds its batch by a binary search of the batches' first indexes.
    INSERT INTO ${S}.events (position, stream, kind, revision, type, data, event_id, batch_end, recorded_at, schema_version)
      SELECT b.pos - b.last + e.k, b.stream, ${Kind.event}, b.rev - b.last + e.k, e.type, e.data::json, e.id,
             CASE WHEN e.id IS NOT NULL THEN b.rev END, p_at, e.version
      FROM unnest(p_types, p_data, p_ids, p_versions) WITH ORDINALITY AS e(type, data, id, version, k)
      JOIN (SELECT u.j, u.stream, u.rev, u.pos, u.first + u.n - 1 AS last
            FROM unnest(p_streams, p_counts, v_status, v_rev, v_pos, v_first) WITH ORDINALITY AS u(stream, n, st, rev, pos, first, j)
            WHERE u.st = 0) AS b ON b.j = width_bucket(e.k::integer, v_first);
    UPDATE ${S}.feed_head SET position = v_last;
  END
  $fn$;`;

/** What `inspect` found: whether the schema exists and its version (0 when it has no sessionfold tables). */
interface Found {
  exists: boolean;
  version: number;
  tables: number;
}

/** Reads the state of `schema`; never fails for a missing schema or table, so it may run inside a transaction. */
async function inspect(pool: PgPool | PoolClient, schema: string): Promise<Found> {
  const { rows } = await pool.query<{ exists: boolean; tables: string; versioned: boolean }>({
    text: `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS exists,
                  (SELECT count(*) FROM pg_tables WHERE schemaname = $1) AS tables,
                  to_regclass($2) IS NOT NULL AS versioned`,
    values: [schema, `${quoted(schema)}.schema_version`],
  });
  const row = rows[0] as { exists: boolean; tables: string; versioned: boolean };
  let version = 0;
  if (row.versioned) {
    const result = await pool.query<{ version: number }>(`SELECT version FROM ${quoted(schema)}.schema_version`);
    version = result.rows[0]?.version ?? 0;
  }
  return { exists: row.exists, version, tables: Number(row.tables) };
}

/** Refuses a schema this release must not touch: one written by a newer release, or another application's. */
function refuse(schema: string, found: Found): void {
  if (found.version > SCHEMA_VERSION) {
    throw new StorageError(
      `@sessionfold/store-postgres: schema ${schema} has version ${found.version}, written by a newer @sessionfold/store-postgres; ` +
        `this release reads versions up to ${SCHEMA_VERSION}. Upgrade @sessionfold/store-postgres to open it; nothing was changed.`,
    );
  }
  if (found.version === 0 && found.tables > 0) {
    throw new StorageError(
      `@sessionfold/store-postgres: schema ${schema} holds tables but no sessionfold schema version; ` +
        'it belongs to something else: pass another `schema`. Nothing was changed.',
    );
  }
}

/**
 * Brings `schema` to `SCHEMA_VERSION`. Openers racing on one database are safe: the work runs in one
 * transaction under a transaction-scoped advisory lock (released at commit, so it also works behind a
 * pooler in transaction mode), and the version is read again under the lock, so only the first migrates.
 */
export async function migrate(pool: PgPool, schema: string): Promise<void> {
  const found = await inspect(pool, schema);
  refuse(schema, found);
  if (found.version === SCHEMA_VERSION) return;
  const client = await pool.connect();
  let broken: unknown;
  try {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK, schema]);
      const locked = await inspect(client, schema);
      refuse(schema, locked);
      if (!locked.exists) await client.query(`CREATE SCHEMA ${quoted(schema)}`);
      for (let next = locked.version; next < SCHEMA_VERSION; next++) {
        await client.query((MIGRATIONS[next] as (S: string, channel: string) => string)(quoted(schema), feedChannel(schema)));
      }
      await client.query(`INSERT INTO ${quoted(schema)}.schema_version (version) VALUES ($1) ON CONFLICT (only_row) DO UPDATE SET version = excluded.version`, [
        SCHEMA_VERSION,
      ]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError;
      });
      throw error;
    }
  } finally {
    client.release(broken === undefined ? undefined : (broken as Error));
  }
}

/** For `readOnly`: checks that the schema exists at this version, and changes nothing. */
export async function checkSchema(pool: PgPool, schema: string): Promise<void> {
  const found = await inspect(pool, schema);
  refuse(schema, found);
  if (found.version !== SCHEMA_VERSION) {
    throw new StorageError(
      `@sessionfold/store-postgres: schema ${schema} ${found.exists ? `has version ${found.version}, not ${SCHEMA_VERSION}` : 'does not exist'}; ` +
        'a read-only store never migrates: open it once without `readOnly` to create or upgrade it.',
    );
  }
}
