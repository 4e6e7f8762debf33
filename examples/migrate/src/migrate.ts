import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { type EventStore, openSessionHistory } from '@sessionfold/core';
// The quick start is an application, not a library: it has no package entry point, so its built module is named.
import { runQuickstart } from '@sessionfold/example-quickstart/dist/quickstart.js';
import { fileStore } from '@sessionfold/store-file';
import { postgresStore } from '@sessionfold/store-postgres';
import { sqliteStore } from '@sessionfold/store-sqlite';
import pg from 'pg';
import { type ObjectRef, type Records, readRecords } from './records.js';
import { sessionfold, sessionfoldJson } from './sessionfold-command.js';

/** What `sessionfold copy --json` reports. */
export interface CopySummary {
  /** Streams in the source, each copied or found up to date. */
  streams: number;
  /** Events and blobs the destination did not hold yet. */
  events: number;
  blobs: number;
  /** Streams the destination already held in full. */
  unchanged: number;
  /** Both stores fold every stream to identical state; `mismatches` names those that do not. */
  identical: boolean;
  mismatches: string[];
}

/** One backend the file store was moved to, and what was found there. */
export interface Destination {
  name: 'SQLite' | 'PostgreSQL';
  /** The store URL the commands were given (a file or SQLite path is relative to the migration's directory). */
  url: string;
  copy: CopySummary;
  /** Exit code of `sessionfold verify` on the destination. */
  verifyExitCode: number;
  /** The service's records on the destination. */
  records: Records;
  /** Whether they equal the file store's records. */
  identical: boolean;
  /** What the second `copy` reported. */
  copyAgain: CopySummary;
  /** Whether the destination's change feed (`sessionfold tail --json`) was the same before and after the second copy. */
  feedUnchanged: boolean;
}

/** What the migration did, for its caller (and its test) to check. */
export interface MigrationResult {
  /** The file store's records, read before any copy. */
  source: Records;
  destinations: Destination[];
  /** Every destination holds the source's records and a second copy changed nothing. */
  ok: boolean;
}

/** Whether it goes on to PostgreSQL, and where its lines go. */
export interface MigrationOptions {
  /** A `postgres://` URL; without one, the PostgreSQL step is skipped with one printed line. */
  postgresUrl?: string | undefined;
  say?: (line: string) => void;
}

/**
 * Fills a file store in `directory` with the quick start and one session in flight, copies it with the
 * `sessionfold` command to SQLite and from there to PostgreSQL (a fresh schema, dropped at the end), verifies
 * each copy and opens the service on it to compare its records with the file store's.
 */
export async function runMigration(directory: string, options: MigrationOptions = {}): Promise<MigrationResult> {
  const say = options.say ?? console.log;
  mkdirSync(directory, { recursive: true });
  say(`sessionfold migrate: stores in ${directory}`);

  const fileUrl = 'file:file-store';
  const objects = await fill(join(directory, 'file-store'));
  const fileRead = await fileStore({ directory: join(directory, 'file-store'), readOnly: true });
  const source = await withRecords(fileRead, objects);
  const live = source.list.filter((record) => record.phase !== 'complete').length;
  say(
    `1. filled ${fileUrl} with the quick start and one session in flight: ${source.list.length} record(s), ${live} in flight, ${objects.length} staged object(s)`,
  );

  const destinations: Destination[] = [];
  const sqliteUrl = 'sqlite:sessions.db';
  const sqlitePath = join(directory, 'sessions.db');
  destinations.push(
    await moveTo('SQLite', fileUrl, sqliteUrl, async () => await sqliteStore({ path: sqlitePath }), { directory, source, objects, say, step: 2 }),
  );

  if (options.postgresUrl === undefined) say('3. PostgreSQL skipped: set SESSIONFOLD_PG_URL to a postgres:// URL to copy there too');
  else {
    const schema = `sessionfold_migrate_${randomBytes(4).toString('hex')}`;
    const url = new URL(options.postgresUrl);
    url.searchParams.set('schema', schema);
    const connectionString = options.postgresUrl;
    try {
      destinations.push(
        await moveTo('PostgreSQL', sqliteUrl, url.toString(), () => postgresStore({ connectionString, schema }), { directory, source, objects, say, step: 3 }),
      );
    } finally {
      await dropSchema(connectionString, schema);
      say(`   dropped the schema ${schema}`);
    }
  }

  const ok = destinations.every(
    (destination) =>
      destination.verifyExitCode === 0 &&
      destination.identical &&
      destination.feedUnchanged &&
      destination.copyAgain.events === 0 &&
      destination.copyAgain.blobs === 0,
  );
  say(ok ? "Done: every copy holds records identical to the file store's." : "FAILED: a copy does not hold the file store's records.");
  return { source, destinations, ok };
}

/** What `moveTo` needs besides the two stores. */
interface MoveContext {
  directory: string;
  source: Records;
  objects: readonly ObjectRef[];
  say: (line: string) => void;
  step: number;
}

/** Copies `from` to `to` with the command, verifies `to`, compares its records with the source's, then copies again. */
async function moveTo(name: Destination['name'], from: string, to: string, open: () => Promise<EventStore>, context: MoveContext): Promise<Destination> {
  const { directory, say } = context;
  const shown = redact(to);
  const copy = await sessionfoldJson<CopySummary>(['copy', from, to], { cwd: directory });
  say(
    `${context.step}. sessionfold copy ${from} ${shown}: ${copy.streams} stream(s), ${copy.events} event(s) and ${copy.blobs} blob(s) copied, ` +
      `${copy.unchanged} already up to date; ` +
      `${copy.identical ? 'both stores fold every stream to identical state' : 'the stores fold differently'}`,
  );

  const verify = await sessionfold(['verify', '--store', to], { cwd: directory });
  say(`   sessionfold verify --store ${shown}: exit ${verify.code}${verify.code === 0 ? ', no problems' : `\n${verify.stdout}`}`);

  const records = await withRecords(await open(), context.objects);
  const identical = isDeepStrictEqual(records, context.source);
  say(
    `   the service on ${name}: ${records.list.length} record(s); list, get, command heads and staged objects ${identical ? 'identical to' : 'DIFFER from'} the file store's`,
  );

  const feedBefore = await sessionfold(['tail', '--store', to, '--json'], { cwd: directory });
  const copyAgain = await sessionfoldJson<CopySummary>(['copy', from, to], { cwd: directory });
  const feedAfter = await sessionfold(['tail', '--store', to, '--json'], { cwd: directory });
  const feedUnchanged = feedBefore.code === 0 && feedAfter.code === 0 && feedBefore.stdout === feedAfter.stdout;
  say(
    `   copied again: ${copyAgain.events === 0 && copyAgain.blobs === 0 ? 'nothing new' : `${copyAgain.events} event(s) new`}, ` +
      `${copyAgain.unchanged} stream(s) already up to date; the change feed is ${feedUnchanged ? 'unchanged' : 'CHANGED'}`,
  );
  return { name, url: to, copy, verifyExitCode: verify.code, records, identical, copyAgain, feedUnchanged };
}

/**
 * The quick start's session (completed: a receipt in the catalog), then one session left in flight the same
 * way, so the copy carries a live journal, a command queue and a staged object's bytes too.
 */
async function fill(directory: string): Promise<ObjectRef[]> {
  await runQuickstart(directory, () => {});
  const store = await fileStore({ directory });
  const history = await openSessionHistory({ store });
  try {
    const run = new Date().toISOString();
    const { value: session } = await history.start({ idempotencyId: `migrate-${run}`, startedAt: run, sessionType: 'conversation' });
    await history.appendTranscript(session.id, { role: 'user-message', text: 'Move our sessions to the database, please.' });
    await history.appendTranscript(session.id, { role: 'assistant-message', text: 'Copying them now; nothing is lost on the way.' });
    const bytes = new TextEncoder().encode('meeting notes: three decisions, two open questions\n');
    const pendingId = await history.stageObject(session.id, { fileName: 'notes.txt', mediaType: 'text/plain', bytes });
    const { value: sending } = await history.enqueue(session.id, { idempotencyId: 'reply-1', kind: 'message', payload: { text: 'Send the notes' } });
    await history.claimCommand(sending.id);
    await history.enqueue(session.id, { idempotencyId: 'reply-2', kind: 'message', payload: { text: 'And file them' } });
    return [{ session: session.id, pendingId }];
  } finally {
    await history.close();
    await store.close();
  }
}

/** Opens the service on `store`, reads its records and closes both. */
async function withRecords(store: EventStore, objects: readonly ObjectRef[]): Promise<Records> {
  try {
    const history = await openSessionHistory({ store });
    try {
      return await readRecords(history, objects);
    } finally {
      await history.close();
    }
  } finally {
    await store.close();
  }
}

async function dropSchema(connectionString: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** A URL without its password, for printing. */
function redact(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
}
