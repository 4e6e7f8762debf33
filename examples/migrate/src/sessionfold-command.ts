import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What one run of the `sessionfold` command left. */
export interface CommandRun {
  /** The command line as a user would type it. */
  line: string;
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the installed `sessionfold` command with `args` as a process of its own, as `npx sessionfold …` would,
 * and resolves when it exits (never rejects for a non-zero exit code: the caller reads `code`).
 */
export function sessionfold(args: readonly string[], options: { cwd?: string } = {}): Promise<CommandRun> {
  const bin = installedBin();
  const line = ['sessionfold', ...args].join(' ');
  // SESSIONFOLD_STORE would be the default of `--store`; every store here is named on the command line.
  const env = { ...process.env };
  delete env['SESSIONFOLD_STORE'];
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env, cwd: options.cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ line, code, stdout, stderr });
    });
  });
}

/** Runs `sessionfold … --json` and parses its one JSON document; any exit code other than 0 is an error naming the command. */
export async function sessionfoldJson<T>(args: readonly string[], options: { cwd?: string } = {}): Promise<T> {
  const run = await sessionfold([...args, '--json'], options);
  if (run.code !== 0) throw new Error(`${run.line} exited with ${run.code}: ${run.stderr.trim() || run.stdout.trim()}`);
  return JSON.parse(run.stdout) as T;
}

let bin: string | undefined;
/**
 * The `bin` file of the installed `@sessionfold/cli`, found the way Node finds a package (each `node_modules` up
 * from here). Run with this Node rather than through the `.bin` link, so it works the same on every platform.
 */
function installedBin(): string {
  if (bin !== undefined) return bin;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const root = join(dir, 'node_modules', '@sessionfold', 'cli');
    if (existsSync(join(root, 'package.json'))) {
      const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin?: Record<string, string> };
      const relative = manifest.bin?.['sessionfold'];
      if (relative === undefined) throw new Error(`${root} declares no sessionfold command`);
      bin = join(root, relative);
      return bin;
    }
    if (dirname(dir) === dir) throw new Error('the sessionfold command is not installed: npm install @sessionfold/cli, then npm run build');
  }
}
