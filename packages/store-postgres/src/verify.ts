import { createHash } from 'node:crypto';
import type { VerifyCode, VerifyProblem, VerifyReport, VerifySeverity } from '@sessionfold/core/kernel';
import { validateSnapshot } from '@sessionfold/core/store-kit';
import type { PoolClient } from 'pg';
import { queryTypes } from './queries.js';
import { Kind, quoted } from './schema.js';

/** Rows (events) or blobs read per query of the scans; the abort signal is looked at between pages. */
const VERIFY_PAGE = 4096;
const BLOB_PAGE = 64;

type Add = (severity: VerifySeverity, code: VerifyCode, table: string, key: string, message: string) => void;

/**
 * Checks a schema through `client` in one `REPEATABLE READ READ ONLY` transaction: nothing it runs can write,
 * and every check sees the same commit while writers go on. Checks what constraints do not: each stream's
 * revisions 1-based (or from its snapshot) and gap-free up to its stream row, positions rising with revisions
 * and unique, event data that parses as JSON, snapshot records naming their stream and revision, blob bytes
 * against their sha256, owners without bytes, bytes without owners, the feed counter against the last
 * position, and the store identity row. Driver errors are thrown as they are; the caller translates them.
 */
export async function verifySchema(client: PoolClient, schema: string, signal: AbortSignal | undefined): Promise<VerifyReport> {
  signal?.throwIfAborted();
  const S = quoted(schema);
  const problems: VerifyProblem[] = [];
  const add: Add = (severity, code, table, key, message) => problems.push({ severity, code, message, table: `${schema}.${table}`, key });
  const all = async <T>(text: string, values: unknown[] = []): Promise<T[]> => {
    signal?.throwIfAborted();
    return (await client.query<T & object>({ text, values, types: queryTypes })).rows;
  };
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  try {
    // One pass over the events in position order gathers what each stream's checks need; only what it finds
    // wrong is looked at again by query. A query per check read the table three more times, sorting it twice.
    const scan = await scanRecords(client, S, add, signal);
    const streamRows = await all<{ stream: string; revision: number }>(`SELECT stream, revision FROM ${S}.streams`);
    checkStreams(streamRows, scan.streams, add);
    await checkPositions(all, S, add, scan.disordered);
    const blobs = await checkBlobs(all, S, add);
    const counts = { streams: streamRows.length, records: scan.records, snapshots: scan.snapshots, blobs };
    const identities = await all<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.store_identity`);
    if (identities[0]?.n !== 1) add('error', 'index_mismatch', 'store_identity', 'only_row', `the store has ${identities[0]?.n ?? 0} identity rows, not 1`);
    return { ok: !problems.some((p) => p.severity === 'error'), problems, checked: counts };
  } finally {
    await client.query('ROLLBACK');
  }
}

type All = <T>(text: string, values?: unknown[]) => Promise<T[]>;

/** What the scan gathered of one stream's events (kind event) and snapshot records. */
interface StreamFacts {
  first: number | null;
  last: number | null;
  n: number;
  snapshot: number | null;
  snapshots: number;
  /** The highest revision met so far in position order: a lower one after it means positions out of revision order. */
  highest: number;
}

function noFacts(): StreamFacts {
  return { first: null, last: null, n: 0, snapshot: null, snapshots: 0, highest: 0 };
}

/** Each stream row against its events and snapshot record: revisions from snapshot + 1 (or 1) to the row's revision, each once. */
function checkStreams(rows: { stream: string; revision: number }[], facts: Map<string, StreamFacts>, add: Add): void {
  const heads = new Map(rows.map((row) => [row.stream, row.revision]));
  const streams = new Set([...heads.keys(), ...facts.keys()]);
  for (const stream of streams) {
    const head = heads.get(stream);
    const row = facts.get(stream) ?? noFacts();
    if (head === undefined) {
      add('error', 'index_mismatch', 'streams', stream, `stream ${stream} has events or a snapshot but no stream row`);
      continue;
    }
    if (row.snapshots > 1) add('error', 'damaged_snapshot', 'events', stream, `stream ${stream} has ${row.snapshots} snapshot records`);
    if (row.first === null && row.snapshot === null) {
      add('error', 'index_mismatch', 'streams', stream, `stream ${stream} is listed but has neither events nor a snapshot`);
      continue;
    }
    const expectedFirst = (row.snapshot ?? 0) + 1;
    if (row.first !== null && (row.first !== expectedFirst || row.n !== (row.last as number) - row.first + 1)) {
      add(
        'error',
        'revision_gap',
        'events',
        stream,
        `stream ${stream} has ${row.n} events at revisions ${row.first}..${row.last}; expected ${expectedFirst} onwards, gap-free`,
      );
    }
    const end = row.last ?? row.snapshot;
    if (end !== head) add('error', 'revision_gap', 'streams', stream, `stream ${stream} is at revision ${head}, its records end at ${end}`);
  }
}

/**
 * Positions rise with revisions in each stream (the streams the scan found out of order are named revision by
 * revision), and the feed counter is the last position.
 */
async function checkPositions(all: All, S: string, add: Add, disordered: string[]): Promise<void> {
  if (disordered.length > 0) {
    const rows = await all<{ stream: string; revision: number; position: number }>(
      `SELECT stream, revision, position FROM (SELECT stream, revision, position, lag(position) OVER (PARTITION BY stream ORDER BY revision) AS prev
                                               FROM ${S}.events WHERE kind = ${Kind.event} AND stream = ANY($1)) AS x
       WHERE x.prev >= x.position`,
      [disordered],
    );
    for (const row of rows) {
      add(
        'error',
        'position_order',
        'events',
        `${row.stream}@${row.revision}`,
        `revision ${row.revision} of ${row.stream} is at position ${row.position}, not after the one before`,
      );
    }
  }
  const [counter] = await all<{ counter: number | null; last: number | null; rows: number }>(
    `SELECT (SELECT position FROM ${S}.feed_head) AS counter, (SELECT max(position) FROM ${S}.events) AS last, (SELECT count(*)::int FROM ${S}.feed_head) AS rows`,
  );
  if (counter === undefined || counter.rows !== 1) {
    add('error', 'index_mismatch', 'feed_head', 'only_row', `the feed counter has ${counter?.rows ?? 0} rows, not 1`);
  } else if ((counter.last ?? 0) !== counter.counter) {
    add('error', 'index_mismatch', 'feed_head', 'only_row', `the feed counter is at ${counter.counter}, the last position in events is ${counter.last ?? 0}`);
  }
}

/**
 * Reads every record in position order: its data parses as JSON, a snapshot record is a snapshot of its own
 * stream at its own revision, no position is used twice (the primary key forbids it; a damaged index would
 * not). Gathers per stream what `checkStreams` needs, and the streams whose positions do not rise with revisions.
 */
async function scanRecords(
  client: PoolClient,
  S: string,
  add: Add,
  signal: AbortSignal | undefined,
): Promise<{ streams: Map<string, StreamFacts>; disordered: string[]; records: number; snapshots: number }> {
  const streams = new Map<string, StreamFacts>();
  const disordered = new Set<string>();
  let records = 0;
  let snapshots = 0;
  let previous = -1;
  // Consecutive records are mostly of one stream (an append's batch): its facts are looked up once per run.
  let current = '';
  let facts = noFacts();
  const text = `SELECT position, stream, kind, revision, data FROM ${S}.events WHERE position > $1 ORDER BY position LIMIT ${VERIFY_PAGE}`;
  const name = `sessionfold_verify_${createHash('sha256').update(S).digest('hex').slice(0, 16)}`;
  const pageAfter = (after: number) => {
    signal?.throwIfAborted();
    return client.query<ScanRow>({ name, text, values: [after], types: queryTypes, rowMode: 'array' });
  };
  let pending = pageAfter(0);
  for (;;) {
    const page = (await pending).rows;
    const last = page[page.length - 1];
    const more = last !== undefined && page.length === VERIFY_PAGE;
    // The next page is asked for before this one is checked, so the server reads it while this process parses.
    // A copy of the page's last position on the next page is passed over by `>`: a duplicate is found within a page.
    if (more) pending = pageAfter(last[0]);
    for (let r = 0; r < page.length; r++) {
      const [position, stream, kind, revision, data] = page[r] as ScanRow;
      records++;
      if (position === previous) add('error', 'duplicate_position', 'events', String(position), `position ${position} is used more than once`);
      previous = position;
      if (kind === Kind.event || kind === Kind.snapshot) {
        if (stream !== current) {
          current = stream;
          const found = streams.get(stream);
          if (found === undefined) streams.set(stream, (facts = noFacts()));
          else facts = found;
        }
        if (kind === Kind.event) {
          if (revision <= facts.highest) disordered.add(stream);
          else facts.highest = revision;
          facts.n++;
          if (facts.first === null || revision < facts.first) facts.first = revision;
          if (facts.last === null || revision > facts.last) facts.last = revision;
        } else {
          snapshots++;
          facts.snapshots++;
          if (facts.snapshot === null || revision > facts.snapshot) facts.snapshot = revision;
        }
      }
      let value: unknown;
      try {
        value = JSON.parse(data);
      } catch {
        add('error', 'damaged_record', 'events', String(position), `position ${position} (${stream}@${revision}): data is not JSON`);
        continue;
      }
      if (kind !== Kind.snapshot) continue;
      try {
        const snapshot = validateSnapshot(stream, value);
        if (snapshot.revision !== revision) throw new Error(`says revision ${snapshot.revision}, its row ${revision}`);
      } catch (error) {
        add('error', 'damaged_snapshot', 'events', stream, `the snapshot record of ${stream} (position ${position}): ${(error as Error).message}`);
      }
    }
    if (!more) break;
  }
  return { streams, disordered: [...disordered], records, snapshots };
}

/** A record as the scan reads it: position, stream, kind, revision, data (json as its text). */
type ScanRow = [number, string, number, number, string];

/** Blob bytes against their sha256; owners whose bytes are missing (errors); bytes no stream owns (warnings). */
async function checkBlobs(all: All, S: string, add: Add): Promise<number> {
  let after = '';
  let count = 0;
  for (;;) {
    const page = await all<{ sha256: string; bytes: Buffer }>(
      `SELECT sha256, bytes FROM ${S}.blobs WHERE sha256 COLLATE "C" > $1 ORDER BY sha256 COLLATE "C" LIMIT ${BLOB_PAGE}`,
      [after],
    );
    count += page.length;
    for (const row of page) {
      if (createHash('sha256').update(row.bytes).digest('hex') !== row.sha256)
        add('error', 'blob_hash', 'blobs', row.sha256, `the bytes of blob ${row.sha256} do not match their sha256`);
    }
    const last = page[page.length - 1];
    if (last === undefined || page.length < BLOB_PAGE) break;
    after = last.sha256;
  }
  const missing = await all<{ stream: string; sha256: string }>(
    `SELECT o.stream, o.sha256 FROM ${S}.blob_owners AS o WHERE NOT EXISTS (SELECT 1 FROM ${S}.blobs AS b WHERE b.sha256 = o.sha256)`,
  );
  for (const row of missing)
    add('error', 'blob_missing', 'blob_owners', `${row.stream}/${row.sha256}`, `stream ${row.stream} owns blob ${row.sha256}, whose bytes are missing`);
  const orphans = await all<{ sha256: string }>(
    `SELECT b.sha256 FROM ${S}.blobs AS b WHERE NOT EXISTS (SELECT 1 FROM ${S}.blob_owners AS o WHERE o.sha256 = b.sha256)`,
  );
  for (const row of orphans) add('warning', 'blob_orphan', 'blobs', row.sha256, `blob ${row.sha256} has no owner`);
  return count;
}
