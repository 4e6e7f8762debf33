import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs, USAGE } from './cli-args.js';
import { runBench } from './run.js';
import { installPeersOnLoad } from './stores.js';
import { cells, formatReport } from './table.js';

/** `npm run bench`: runs every scenario on every store, prints the table, optionally writes JSON. */
async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  if (options.help) {
    console.log(USAGE);
    return;
  }
  // The peers live outside the workspace's install: the benchmark's own run brings them in the first time.
  installPeersOnLoad(true);
  const began = performance.now();
  // stdout carries only the report: anything a store prints while it runs goes to stderr.
  const log = console.log;
  console.log = (...args: unknown[]) => console.error(...args);
  const report = await runBench({
    mode: options.mode,
    volumes: options.volumes,
    isolate: options.isolate,
    stores: options.stores,
    scenarios: options.scenarios,
    onRow: (row) => {
      process.stderr.write(`  [${((performance.now() - began) / 1000).toFixed(1)} s] ${cells(row).filter(Boolean).join('  ')}\n`);
    },
  }).finally(() => {
    console.log = log;
  });
  console.log(formatReport(report));
  if (options.json) {
    // npm runs the script in the package directory; resolve against where the command was typed.
    const file = resolve(process.env['INIT_CWD'] ?? process.cwd(), options.json);
    await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nJSON written to ${file}`);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
