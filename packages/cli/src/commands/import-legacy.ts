import { existsSync, lstatSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import type { CompletionReceipt, SessionCommand } from '@sessionfold/core';
import {
  CATALOG_STREAM,
  RECEIPT_ID_NAMESPACE,
  catalogReducer,
  isUuid,
  sessionStream,
  startKeyReducer,
  startKeyStream,
  uuidV5,
} from '@sessionfold/core/session';
import { ConcurrencyError, foldStream, type EventStore, type NewEvent } from '@sessionfold/core/kernel';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { CliError, ExitCode, notFound } from '../exit-codes.js';
import { examples } from '../help.js';
import { readCompletedList } from '../legacy/completed-list.js';
import { LegacyJournalError, readControlJournal } from '../legacy/control-journal.js';
import { commandFromLegacy, lifecycleFromLegacy } from '../legacy/records.js';
import { parseArg } from '../parse.js';
import { progress } from '../progress.js';

const CONTROL_EXTENSION = '.session-control';
const LOG_EXTENSION = '.session-log';
/** The completed list's name where the legacy service keeps it by default: beside its sessions directory. */
const COMPLETED_LIST_NAME = 'session-history.txt';
/** The `source` of every SessionImported event this command writes. */
const SOURCE = 'legacy-session-history';

const optionsSchema = z.object({ completedList: z.string().min(1).optional() });

/** One problem with a legacy file: an error stops that file, a warning does not. */
interface LegacyProblem {
  severity: 'error' | 'warning';
  file: string;
  line?: number;
  message: string;
}

/**
 * `import-legacy <dir> [--completed-list FILE]`: the legacy service's control journals and completed list,
 * carried over as they were through the import events of the session domain. Idempotent: a session, command
 * or receipt already in the store is left as it is, so running it again imports nothing new.
 */
export function registerImportLegacy(program: Command): void {
  program
    .command('import-legacy')
    .description("import the legacy session service's data: its *.session-control journals and its completed list")
    .argument('<dir>', 'the directory of *.session-control journals')
    .option('--completed-list <file>', 'the completed list (bare session object ids or JSON receipts, one a line)')
    .addHelpText(
      'after',
      examples(
        'sessionfold import-legacy ./sessions --completed-list ./session-history.txt -s file:./data',
        'sessionfold import-legacy ./sessions -s sqlite:./sessions.db --json',
      ) +
        '\n\nSessions keep their ids, versions, phases, failures and commands (with their ids and sequences); a start with an\n' +
        "imported session's start idempotency id returns it. A torn last line is dropped; a bad checksum stops that file\n" +
        '(named with its line) and the others go on (exit 1). *.session-log files are not imported.',
    )
    .action(async (rawDir: unknown, rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const directory = parseArg(z.string().min(1), rawDir, '<dir>');
      const { completedList } = parseArg(optionsSchema, rawOptions, 'options');
      if (!existsSync(directory) || !statSync(directory).isDirectory()) throw notFound(`no directory ${directory}`);
      const { out } = context;
      const names = (await readdir(directory)).sort();
      const controls = names.filter((name) => name.endsWith(CONTROL_EXTENSION));
      const logs = names.filter((name) => name.endsWith(LOG_EXTENSION));
      const problems: LegacyProblem[] = [];
      const counts = { sessionsImported: 0, sessionsPresent: 0, commandsImported: 0, receiptsImported: 0, receiptsPresent: 0, startKeysBound: 0 };

      // Read before anything is imported: a list that cannot be read leaves the store as it was.
      const completed = completedList === undefined ? undefined : await readCompletedList(completedList, { follow: true });
      const leftOut = completedList === undefined ? await completedLeftOut(directory) : undefined;
      await withStore(context, 'create', async ({ store }) => {
        const bar = progress(out, 'import-legacy', controls.length);
        try {
          for (const name of controls) {
            await importJournal(store, join(directory, name), name, problems, counts);
            bar.tick();
          }
        } finally {
          bar.stop();
        }
        if (completedList !== undefined && completed !== undefined) {
          for (const problem of completed.problems) problems.push({ severity: 'error', file: basename(completedList), ...problem });
          await importReceipts(store, completed.receipts, counts);
        }
      });

      const failedFiles = problems.filter((problem) => problem.severity === 'error').length;
      const note = `${logs.length} *.session-log file(s) not imported: the session log is an external format, out of scope for this import`;
      const completedNote = leftOut && describeLeftOut(leftOut);
      if (out.json) {
        await out.document({
          ok: failedFiles === 0,
          ...counts,
          journals: controls.length,
          sessionLogsSkipped: logs.length,
          note,
          ...(leftOut ? { completedLeftOut: leftOut.count, completedNote } : {}),
          problems,
        });
      } else {
        for (const problem of problems)
          await out.text(`${problem.severity}: ${problem.file}${problem.line === undefined ? '' : `:${problem.line}`}: ${problem.message}`);
        await out.text(
          `imported ${counts.sessionsImported} session(s) (${counts.sessionsPresent} already present), ${counts.commandsImported} command(s), ` +
            `${counts.receiptsImported} receipt(s) (${counts.receiptsPresent} already present) from ${controls.length} journal(s)`,
        );
        await out.text(note);
        if (completedNote) await out.text(completedNote);
      }
      if (failedFiles > 0) process.exitCode = ExitCode.problems;
    });
}

/** The legacy completed list found beside `<dir>` when none was given, and how many completed sessions it lists. */
interface LeftOut {
  path: string | undefined;
  count: number | undefined;
}

/**
 * Looks for the legacy service's completed list where it keeps it by default (beside `<dir>`, or inside it) and
 * counts the completed sessions it lists; an entry that is not a regular file is not read.
 */
async function completedLeftOut(directory: string): Promise<LeftOut> {
  for (const path of [join(dirname(directory), COMPLETED_LIST_NAME), join(directory, COMPLETED_LIST_NAME)]) {
    if (!lstatSync(path, { throwIfNoEntry: false })) continue;
    try {
      return { path, count: (await readCompletedList(path, { follow: false })).receipts.length };
    } catch (error) {
      if (error instanceof CliError) return { path, count: undefined };
      throw error;
    }
  }
  return { path: undefined, count: undefined };
}

function describeLeftOut({ path, count }: LeftOut): string {
  if (path === undefined)
    return `completed sessions were not imported: they are in the legacy completed list (${COMPLETED_LIST_NAME}); add --completed-list FILE to import them`;
  const how = `add --completed-list ${path} to import them`;
  return count === undefined
    ? `the completed sessions listed in ${path} were left out; ${how}`
    : `${count} completed session(s) listed in ${path} were left out; ${how}`;
}

type Counts = Record<'sessionsImported' | 'sessionsPresent' | 'commandsImported' | 'receiptsImported' | 'receiptsPresent' | 'startKeysBound', number>;

/** Imports one journal: its session and commands in one append (all or nothing), then binds its start key. */
async function importJournal(store: EventStore, path: string, name: string, problems: LegacyProblem[], counts: Counts): Promise<void> {
  let journal;
  try {
    journal = await readControlJournal(path, name);
  } catch (error) {
    if (error instanceof LegacyJournalError) {
      problems.push({ severity: 'error', file: error.file, line: error.line, message: `${error.reason}; this file was not imported` });
      return;
    }
    // Not a regular file (a FIFO, a device, a link, a directory) or unreadable: named, and the others go on.
    if (error instanceof CliError) {
      problems.push({ severity: 'error', file: name, message: `${error.message}; this file was not imported` });
      return;
    }
    throw error;
  }
  if (journal.tornTail !== undefined)
    problems.push({ severity: 'warning', file: name, line: journal.tornTail, message: 'an unfinished last line (a torn write) was dropped' });
  if (journal.lifecycle === undefined) {
    problems.push({ severity: 'warning', file: name, message: 'no session_lifecycle record: nothing to import' });
    return;
  }
  let record;
  try {
    record = lifecycleFromLegacy(journal.lifecycle);
  } catch (error) {
    problems.push({
      severity: 'error',
      file: name,
      message: `the session_lifecycle record does not have the legacy shape (${describe(error)}); this file was not imported`,
    });
    return;
  }
  // As the legacy reader took them: a command record it cannot read is passed over, and the latest record of each
  // id that reads wins, kept in the order the id first appeared.
  const byId = new Map<string, SessionCommand>();
  for (const { line, value } of journal.commands) {
    try {
      const command = commandFromLegacy(value, record.id);
      byId.set(command.id, command);
    } catch (error) {
      problems.push({
        severity: 'warning',
        file: name,
        line,
        message: `a session_command record does not have the legacy shape (${describe(error)}); it was skipped`,
      });
    }
  }
  const commands = [...byId.values()];
  const stem = name.slice(0, -CONTROL_EXTENSION.length).toLowerCase();
  if (!isUuid(record.id) || record.id !== stem) {
    problems.push({ severity: 'error', file: name, message: `session id ${JSON.stringify(record.id)} is not this file's UUID; this file was not imported` });
    return;
  }
  const at = new Date().toISOString();
  const events: NewEvent[] = [
    { type: 'SessionImported', data: { at, source: SOURCE, record } as never },
    ...commands.map((command): NewEvent => ({ type: 'CommandImported', data: { at, command } as never })),
  ];
  try {
    await store.append(sessionStream(record.id), events, { expectedRevision: 'no_stream' });
    counts.sessionsImported++;
    counts.commandsImported += commands.length;
  } catch (error) {
    if (!(error instanceof ConcurrencyError)) throw error;
    counts.sessionsPresent++;
  }
  const key = record.state['startIdempotencyId'];
  if (typeof key === 'string' && record.phase !== 'complete') {
    const other = await bindStartKey(store, key, record.id, counts);
    if (other)
      problems.push({
        severity: 'warning',
        file: name,
        message: `start key ${JSON.stringify(key)} already belongs to live session ${other}; a start with it returns that one`,
      });
  }
}

/**
 * Binds start key `key` to the imported session, unless it is bound to it already or to another live session;
 * returns the id of that other session.
 */
async function bindStartKey(store: EventStore, key: string, sessionId: string, counts: Counts): Promise<string | undefined> {
  const stream = startKeyStream(key);
  const { state, revision } = await foldStream(store, stream, startKeyReducer);
  if (state.bindings.some((binding) => binding.sessionId === sessionId)) return undefined;
  const latest = state.bindings.at(-1);
  if (latest && !latest.released) return latest.sessionId;
  const incarnation = state.bindings.length + 1;
  await store.append(stream, [{ type: 'StartKeyBound', data: { at: new Date().toISOString(), idempotencyId: key, incarnation, sessionId } }], {
    expectedRevision: revision === 0 ? 'no_stream' : revision,
  });
  counts.startKeysBound++;
  return undefined;
}

/** Adds each receipt to the catalog unless one for its session object is there (listed twice: imported once). */
async function importReceipts(store: EventStore, receipts: readonly CompletionReceipt[], counts: Counts): Promise<void> {
  const { state, revision: start } = await foldStream(store, CATALOG_STREAM, catalogReducer);
  const present = new Set(state.receipts.map((receipt) => receipt.sessionObjectId));
  let revision = start;
  for (const receipt of receipts) {
    if (present.has(receipt.sessionObjectId)) {
      counts.receiptsPresent++;
      continue;
    }
    const result = await store.append(
      CATALOG_STREAM,
      [{ type: 'CompletionRecorded', data: { receipt } as never, eventId: uuidV5(receipt.sessionObjectId, RECEIPT_ID_NAMESPACE) }],
      {
        expectedRevision: revision === 0 ? 'no_stream' : revision,
      },
    );
    revision = result.revision;
    present.add(receipt.sessionObjectId);
    counts.receiptsImported++;
  }
}

function describe(error: unknown): string {
  if (error instanceof z.ZodError) {
    const issue = error.issues[0];
    return issue ? `${issue.path.map(String).join('.') || 'value'}: ${issue.message}` : 'invalid';
  }
  return error instanceof Error ? error.message : String(error);
}
