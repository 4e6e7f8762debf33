import { createHash } from 'node:crypto';
import { StorageError } from '@sessionfold/core/kernel';
import type { PoolClient } from 'pg';
import type { PgPool } from './pool.js';

/** The schema version this release writes; the row of `schema_version` in a migrated schema. */
export const SCHEMA_VERSION = 3;

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
 * Forward migrations: entry `n` takes a schema from version `n` to `n + 1`. Never edit a released entry;
 * append a new one, so every older schema can be brought forward. `S` is the quoted schema name, `channel`
 * its `feedChannel`.
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
  DROP FUNCTION ${S}.compact_stream(text, bigint, text, text);
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
];

/**
 * The writes, as functions: each write is one statement, so one round trip and its own transaction (an
 * implicit one: a connection lost midway leaves nothing). Each locks the feed counter first (see feed_head).
 */
const WRITE_FUNCTIONS = (S: string) => `
  -- Appends a group of batches in order; p_counts says how many of the event arrays' entries (p_types, p_data,
  -- p_ids, p_versions: one entry per event, p_versions the version of the data's shape) each batch has.
  -- p_expected: a revision, 0 for no stream, -1 for any. One result row per batch: status 0 written
  -- (revision and position of its last event), 1 a retry of an earlier append (that append's result),
  -- 2 a conflict (revision = the stream's actual revision), 3 a later event id already in the stream
  -- (revision = the 0-based index of that event in the batch). A batch that is refused writes nothing.
  CREATE FUNCTION ${S}.append_batches(
    p_streams text[], p_expected bigint[], p_counts integer[],
    p_types text[], p_data text[], p_ids text[], p_versions integer[], p_at text)
  RETURNS TABLE (status smallint, revision bigint, pos bigint)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_last    bigint;
    v_first   integer := 1;
    v_n       integer;
    v_head    bigint;
    v_hit     record;
    v_bad     bigint;
    v_ids     boolean;
    -- The events decided but not inserted yet, inserted by one statement: at the end, or before an event id
    -- of a stream among them is looked up.
    v_base    bigint;
    v_src     integer[] := '{}';
    v_revs    bigint[] := '{}';
    v_ends    bigint[] := '{}';
    v_strs    text[] := '{}';
    -- The group's streams as they were (v_was) and as the appends before the current one left them (v_now).
    v_names   text[];
    v_was     bigint[];
    v_now     bigint[];
    v_at      integer;
    v_status  smallint[] := '{}';
    v_rev     bigint[] := '{}';
    v_pos     bigint[] := '{}';
  BEGIN
    SELECT f.position INTO v_last FROM ${S}.feed_head AS f FOR UPDATE;
    IF cardinality(array_remove(p_ids, NULL)) = 0
       AND (cardinality(p_streams) = 1 OR (SELECT count(DISTINCT x) FROM unnest(p_streams) AS x) = cardinality(p_streams)) THEN
      -- No event ids and no stream twice: no append of the group depends on another, so one set-based
      -- statement decides and writes them all, instead of a statement or two per append. The counter is
      -- held, so the revisions read here are the ones the stream rows move from.
      RETURN QUERY
      WITH jobs AS (
        SELECT u.j, u.stream, u.expected, u.n, (sum(u.n) OVER (ORDER BY u.j) - u.n + 1)::integer AS first,
               coalesce(s.revision, 0) AS actual
        FROM unnest(p_streams, p_expected, p_counts) WITH ORDINALITY AS u(stream, expected, n, j)
        LEFT JOIN ${S}.streams AS s ON s.stream = u.stream),
      ok AS (
        SELECT jobs.*, v_last + sum(jobs.n) OVER (ORDER BY jobs.j) AS last_pos
        FROM jobs WHERE jobs.expected = -1 OR jobs.expected = jobs.actual),
      moved AS (
        UPDATE ${S}.streams AS s SET revision = s.revision + ok.n FROM ok
        WHERE s.stream = ok.stream AND ok.actual > 0 AND s.revision = ok.actual RETURNING s.stream),
      created AS (
        INSERT INTO ${S}.streams (stream, revision) SELECT ok.stream, ok.n FROM ok WHERE ok.actual = 0 RETURNING stream),
      written AS (
        INSERT INTO ${S}.events (position, stream, kind, revision, type, data, recorded_at, schema_version)
        SELECT ok.last_pos - ok.n + i, ok.stream, ${Kind.event}, ok.actual + i, p_types[ok.first + i - 1], p_data[ok.first + i - 1]::json, p_at,
               p_versions[ok.first + i - 1]
        FROM ok, generate_series(1, ok.n) AS i RETURNING 1),
      counted AS (
        UPDATE ${S}.feed_head SET position = v_last + (SELECT coalesce(sum(ok.n), 0) FROM ok) RETURNING position)
      SELECT (CASE WHEN ok.j IS NULL THEN 2 ELSE 0 END)::smallint,
             CASE WHEN ok.j IS NULL THEN jobs.actual ELSE ok.actual + ok.n END,
             ok.last_pos
      FROM jobs LEFT JOIN ok ON ok.j = jobs.j ORDER BY jobs.j;
      RETURN;
    END IF;
    v_base := v_last;
    IF cardinality(array_remove(p_ids, NULL)) = 0 THEN
      -- No event ids, but a stream more than once (many appends to one stream): each stream's revision is
      -- read once, the appends are decided in order against the revision the ones before them left, and
      -- each stream row is written once. The counter is held, so nothing else moves the rows meanwhile.
      SELECT array_agg(u.name), array_agg(coalesce(s.revision, 0)) INTO v_names, v_was
        FROM (SELECT DISTINCT x AS name FROM unnest(p_streams) AS x) AS u
        LEFT JOIN ${S}.streams AS s ON s.stream = u.name;
      v_now := v_was;
      FOR j IN 1 .. cardinality(p_streams) LOOP
        v_n := p_counts[j];
        v_at := array_position(v_names, p_streams[j]);
        v_head := v_now[v_at];
        IF p_expected[j] = -1 OR p_expected[j] = v_head THEN
          FOR i IN 1 .. v_n LOOP
            v_src := v_src || (v_first + i - 1);
            v_revs := v_revs || (v_head + i);
            v_ends := v_ends || NULL::bigint;
            v_strs := v_strs || p_streams[j];
          END LOOP;
          v_now[v_at] := v_head + v_n;
          v_last := v_last + v_n;
          v_status := v_status || 0::smallint; v_rev := v_rev || (v_head + v_n); v_pos := v_pos || v_last;
        ELSE
          v_status := v_status || 2::smallint; v_rev := v_rev || v_head; v_pos := v_pos || NULL::bigint;
        END IF;
        v_first := v_first + v_n;
      END LOOP;
      UPDATE ${S}.streams AS s SET revision = u.now FROM unnest(v_names, v_was, v_now) AS u(name, was, now)
        WHERE s.stream = u.name AND u.was > 0 AND u.now <> u.was AND s.revision = u.was;
      INSERT INTO ${S}.streams (stream, revision)
        SELECT u.name, u.now FROM unnest(v_names, v_was, v_now) AS u(name, was, now) WHERE u.was = 0 AND u.now > 0;
      IF v_last > v_base THEN
        INSERT INTO ${S}.events (position, stream, kind, revision, type, data, event_id, batch_end, recorded_at, schema_version)
          SELECT v_base + u.k, u.stream, ${Kind.event}, u.rev, p_types[u.src], p_data[u.src]::json, NULL, NULL, p_at, p_versions[u.src]
          FROM unnest(v_strs, v_revs, v_src) WITH ORDINALITY AS u(stream, rev, src, k);
        UPDATE ${S}.feed_head SET position = v_last;
      END IF;
      RETURN QUERY SELECT u.st, u.rv, u.ps FROM unnest(v_status, v_rev, v_pos) WITH ORDINALITY AS u(st, rv, ps, k) ORDER BY u.k;
      RETURN;
    END IF;
    FOR j IN 1 .. coalesce(array_length(p_streams, 1), 0) LOOP
      v_n := p_counts[j];
      status := NULL;
      v_ids := cardinality(array_remove(p_ids[v_first : v_first + v_n - 1], NULL)) > 0;
      -- Event ids are looked up in the table: this stream's pending events must be in it first.
      IF v_ids AND p_streams[j] = ANY (v_strs) THEN
        INSERT INTO ${S}.events (position, stream, kind, revision, type, data, event_id, batch_end, recorded_at, schema_version)
          SELECT v_base + u.k, u.stream, ${Kind.event}, u.rev, p_types[u.src], p_data[u.src]::json, p_ids[u.src], u.batch_end, p_at, p_versions[u.src]
          FROM unnest(v_strs, v_revs, v_src, v_ends) WITH ORDINALITY AS u(stream, rev, src, batch_end, k);
        v_base := v_last; v_src := '{}'; v_revs := '{}'; v_ends := '{}'; v_strs := '{}';
      END IF;
      IF v_ids AND p_ids[v_first] IS NOT NULL THEN
        SELECT e.revision, e.position, e.batch_end INTO v_hit
          FROM ${S}.events AS e WHERE e.stream = p_streams[j] AND e.event_id = p_ids[v_first];
        IF FOUND THEN
          status := 1; revision := v_hit.batch_end; pos := v_hit.position + v_hit.batch_end - v_hit.revision;
        END IF;
      END IF;
      IF status IS NULL AND v_ids AND v_n > 1 THEN
        SELECT min(u.i) INTO v_bad
          FROM unnest(p_ids[v_first + 1 : v_first + v_n - 1]) WITH ORDINALITY AS u(id, i)
          JOIN ${S}.events AS e ON e.stream = p_streams[j] AND e.event_id = u.id
          WHERE u.id IS NOT NULL;
        IF v_bad IS NOT NULL THEN status := 3; revision := v_bad; pos := NULL; END IF;
      END IF;
      IF status IS NULL THEN
        -- Every mode is decided by the statement that moves the stream row, before any position is drawn.
        v_head := NULL;
        IF p_expected[j] > 0 THEN
          UPDATE ${S}.streams AS s SET revision = s.revision + v_n
            WHERE s.stream = p_streams[j] AND s.revision = p_expected[j] RETURNING s.revision - v_n INTO v_head;
        ELSIF p_expected[j] = 0 THEN
          INSERT INTO ${S}.streams AS s (stream, revision) VALUES (p_streams[j], v_n)
            ON CONFLICT (stream) DO NOTHING RETURNING 0 INTO v_head;
        ELSE
          INSERT INTO ${S}.streams AS s (stream, revision) VALUES (p_streams[j], v_n)
            ON CONFLICT (stream) DO UPDATE SET revision = s.revision + v_n RETURNING s.revision - v_n INTO v_head;
        END IF;
        IF v_head IS NULL THEN
          status := 2; pos := NULL;
          SELECT coalesce(max(s.revision), 0) INTO revision FROM ${S}.streams AS s WHERE s.stream = p_streams[j];
        ELSE
          FOR i IN 1 .. v_n LOOP
            v_src := v_src || (v_first + i - 1);
            v_revs := v_revs || (v_head + i);
            v_ends := v_ends || CASE WHEN p_ids[v_first + i - 1] IS NULL THEN NULL ELSE v_head + v_n END;
            v_strs := v_strs || p_streams[j];
          END LOOP;
          v_last := v_last + v_n;
          status := 0; revision := v_head + v_n; pos := v_last;
        END IF;
      END IF;
      RETURN NEXT;
      v_first := v_first + v_n;
    END LOOP;
    IF v_last > v_base THEN
      INSERT INTO ${S}.events (position, stream, kind, revision, type, data, event_id, batch_end, recorded_at, schema_version)
        SELECT v_base + u.k, u.stream, ${Kind.event}, u.rev, p_types[u.src], p_data[u.src]::json, p_ids[u.src], u.batch_end, p_at, p_versions[u.src]
        FROM unnest(v_strs, v_revs, v_src, v_ends) WITH ORDINALITY AS u(stream, rev, src, batch_end, k);
    END IF;
    UPDATE ${S}.feed_head SET position = v_last;
  END
  $fn$;

  -- Stores a snapshot and drops the events it covers. Returns 0 done, 1 no such stream, 2 past the head,
  -- 3 older than the stored snapshot.
  CREATE FUNCTION ${S}.compact_stream(p_stream text, p_revision bigint, p_snapshot text, p_at text)
  RETURNS smallint
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_last bigint;
    v_head bigint;
    v_kept bigint;
  BEGIN
    SELECT f.position INTO v_last FROM ${S}.feed_head AS f FOR UPDATE;
    SELECT s.revision INTO v_head FROM ${S}.streams AS s WHERE s.stream = p_stream FOR UPDATE;
    IF v_head IS NULL THEN RETURN 1; END IF;
    IF p_revision > v_head THEN RETURN 2; END IF;
    SELECT e.revision INTO v_kept FROM ${S}.events AS e WHERE e.stream = p_stream AND e.kind <> ${Kind.event} AND e.kind = ${Kind.snapshot};
    IF v_kept IS NOT NULL AND p_revision < v_kept THEN RETURN 3; END IF;
    v_last := v_last + 1;
    DELETE FROM ${S}.events AS e WHERE e.stream = p_stream AND e.kind = ${Kind.event} AND e.revision <= p_revision;
    DELETE FROM ${S}.events AS e WHERE e.stream = p_stream AND e.kind <> ${Kind.event} AND e.kind = ${Kind.snapshot};
    INSERT INTO ${S}.events (position, stream, kind, revision, type, data, recorded_at)
      VALUES (v_last, p_stream, ${Kind.snapshot}, p_revision, '$snapshot', p_snapshot::json, p_at);
    UPDATE ${S}.feed_head SET position = v_last;
    RETURN 0;
  END
  $fn$;

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
