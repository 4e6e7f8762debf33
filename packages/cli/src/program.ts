import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { EXIT_CODES_HELP } from './exit-codes.js';
import { STORE_ENV } from './store-url.js';

const STORES_HELP = `Stores (--store URL, default $${STORE_ENV}):
  file:./data            a directory of journals (a plain directory path works too)
  sqlite:./sessions.db   one SQLite file
  postgres://user@host/db?schema=name   PostgreSQL (needs @sessionfold/store-postgres)
Commands that only look (info, list, show, replay, streams, read, tail, verify, export, inspect) open the store
read-only: they never write, create or migrate anything and work beside a running writer.`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}

type Register = (program: Command) => void;

/**
 * Each command's module, loaded only when needed: a command brings its own dependencies (the session domain,
 * zod schemas, progress bars), and `read` should not pay for loading what `import-legacy` needs. In the order
 * `--help` lists them.
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  info: async () => (await import('./commands/info.js')).registerInfo,
  list: async () => (await import('./commands/list.js')).registerList,
  show: async () => (await import('./commands/show.js')).registerShow,
  replay: async () => (await import('./commands/replay.js')).registerReplay,
  streams: async () => (await import('./commands/streams.js')).registerStreams,
  read: async () => (await import('./commands/read.js')).registerRead,
  tail: async () => (await import('./commands/tail.js')).registerTail,
  verify: async () => (await import('./commands/verify.js')).registerVerify,
  export: async () => (await import('./commands/export.js')).registerExport,
  inspect: async () => (await import('./commands/inspect.js')).registerInspect,
  import: async () => (await import('./commands/import.js')).registerImport,
  compact: async () => (await import('./commands/compact.js')).registerCompact,
  copy: async () => (await import('./commands/copy.js')).registerCopy,
  delete: async () => (await import('./commands/delete.js')).registerDelete,
  'import-legacy': async () => (await import('./commands/import-legacy.js')).registerImportLegacy,
};

/** Global options that take a value: the word after them is not the command's name. */
const VALUE_OPTIONS = new Set(['-s', '--store']);

/** The command `args` (without node and the script) names, when it names one this program has. */
export function commandNamed(args: readonly string[]): string | undefined {
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (VALUE_OPTIONS.has(arg)) index++;
    else if (!arg.startsWith('-')) return Object.hasOwn(COMMANDS, arg) ? arg : undefined;
  }
  return undefined;
}

/**
 * The `sessionfold` program; errors and help end in a `CommanderError`. Given the command line, only the command
 * it names is registered (its help and parsing are the same); without one (help, version, a typo) every command is.
 */
export async function buildProgram(args: readonly string[] = []): Promise<Command> {
  const program = new Command('sessionfold')
    .description('Look into any sessionfold store, follow it, verify it, and move it anywhere.')
    // With --json anywhere on the line, the version too is a JSON document.
    .version(args.includes('--json') ? JSON.stringify({ version: version() }) : version(), '-V, --version', 'print the version')
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
  const named = commandNamed(args);
  const loaders = named === undefined ? Object.values(COMMANDS) : [COMMANDS[named] as () => Promise<Register>];
  for (const register of await Promise.all(loaders.map((load) => load()))) register(program);
  return program;
}
