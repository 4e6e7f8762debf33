import { main } from '@sessionfold/cli';

/**
 * Child-process entry of the CLI scenario: runs one `sessionfold` command in this fresh process (stdout goes
 * to /dev/null) and reports its exit code, time and peak RSS growth over the process's baseline over IPC.
 */
async function run(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '[]') as string[];
  const baseline = process.memoryUsage().rss;
  const start = performance.now();
  const code = await main(['node', 'sessionfold', ...args]);
  const ms = performance.now() - start;
  const peak = process.resourceUsage().maxRSS * 1024;
  process.send?.({ code, ms, rssGrowthMb: Math.max(0, peak - baseline) / 2 ** 20 });
}

run().catch((error: unknown) => {
  process.send?.({ error: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
});
