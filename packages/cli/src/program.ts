import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerCompact } from './commands/compact.js';
import { registerCopy } from './commands/copy.js';
import { registerDelete } from './commands/delete.js';
import { registerExport } from './commands/export.js';
import { registerImport } from './commands/import.js';
import { registerImportLegacy } from './commands/import-legacy.js';
import { registerInfo } from './commands/info.js';
import { registerList } from './commands/list.js';
import { registerRead } from './commands/read.js';
import { registerReplay } from './commands/replay.js';
import { registerShow } from './commands/show.js';
import { registerStreams } from './commands/streams.js';
import { registerTail } from './commands/tail.js';
import { registerVerify } from './commands/verify.js';
import { EXIT_CODES_HELP } from './exit-codes.js';
import { STORE_ENV } from './store-url.js';

const STORES_HELP = `Stores (--store URL, default $${STORE_ENV}):
  file:./data            a directory of journals (a plain directory path works too)
  sqlite:./sessions.db   one SQLite file
  postgres://user@host/db?schema=name   PostgreSQL (needs @sessionfold/store-postgres)
Commands that only look (info, list, show, replay, streams, read, tail, verify, export) open the store
read-only: they never write, create or migrate anything and work beside a running writer.`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

/** The `sessionfold` program with every command registered; errors and help end in a `CommanderError`. */
export function buildProgram(): Command {
  const program = new Command('sessionfold')
    .description('Look into any sessionfold store, follow it, verify it, and move it anywhere.')
    .version(version(), '-V, --version', 'print the version')
    .option('-s, --store <url>', `the store (default: $${STORE_ENV})`)
    .option('--json', 'machine output on stdout: one JSON document, or JSON lines for streams of events')
    .option('-q, --quiet', 'no progress bar or log lines on stderr')
    .exitOverride()
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showSuggestionAfterError(true)
    .addHelpText(
      'after',
      `\n${STORES_HELP}\n\n${EXIT_CODES_HELP}\n\nExamples:\n  $ sessionfold info --store file:./data\n  $ SESSIONFOLD_STORE=sqlite:./sessions.db sessionfold list --phase active\n  $ sessionfold tail --follow --from end -s file:./data\n  $ sessionfold copy file:./data sqlite:./sessions.db`,
    );
  for (const register of [
    registerInfo,
    registerList,
    registerShow,
    registerReplay,
    registerStreams,
    registerRead,
    registerTail,
    registerVerify,
    registerExport,
    registerImport,
    registerCompact,
    registerCopy,
    registerDelete,
    registerImportLegacy,
  ]) {
    register(program);
  }
  return program;
}
