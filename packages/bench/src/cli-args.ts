import { FULL, QUICK, type Volumes } from './config.js';

/** What the command line asked for. */
export interface CliOptions {
  mode: 'quick' | 'full';
  volumes: Volumes;
  json?: string;
  stores: string[];
  scenarios: string[];
  isolate: boolean;
  help: boolean;
}

/** Usage text of `npm run bench`. */
export const USAGE = `usage: npm run bench -- [--quick] [--json <file>] [--stores a,b] [--scenarios x,y] [--no-isolate]
  --quick        small volumes (under a minute); default is the full run
  --json <file>  also write the report as JSON
  --stores       only these stores (memory,file,sqlite,postgres,emmett-sqlite,emmett-postgresql)
  --scenarios    only these scenario ids
  --no-isolate   measure reads in this process instead of a child process`;

/** Parses `argv` (without node and script); throws on an unknown flag. */
export function parseArgs(argv: readonly string[]): CliOptions {
  const options: CliOptions = { mode: 'full', volumes: FULL, stores: [], scenarios: [], isolate: true, help: false };
  const list = (value: string | undefined, flag: string) => {
    if (!value) throw new Error(`bench: ${flag} needs a value`);
    return value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') Object.assign(options, { mode: 'quick', volumes: QUICK });
    else if (arg === '--full') Object.assign(options, { mode: 'full', volumes: FULL });
    else if (arg === '--json') {
      const file = argv[++i];
      if (!file) throw new Error('bench: --json needs a file name');
      options.json = file;
    } else if (arg === '--stores') options.stores = list(argv[++i], arg);
    else if (arg === '--scenarios') options.scenarios = list(argv[++i], arg);
    else if (arg === '--no-isolate') options.isolate = false;
    else if (arg === '--help' || arg === '-h') options.help = true;
    else throw new Error(`bench: unknown argument ${arg}\n${USAGE}`);
  }
  return options;
}
