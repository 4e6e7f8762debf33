import { readFileSync } from 'node:fs';

/**
 * Child-process entry of the CLI scenario: runs one `sessionfold` command in this fresh process (stdout goes
 * to /dev/null) and reports over IPC its exit code, time (from before the CLI's modules load), and peak RSS,
 * absolute and as growth over the process with the CLI loaded.
 */
async function run(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '[]') as string[];
  const start = performance.now();
  // Loaded inside the timing (a user's command pays for loading its modules too), but before the baseline: the
  // growth is what the command's work holds, the absolute peak what the whole process did.
  const { main } = await import('@sessionfold/cli');
  const baseline = process.memoryUsage().rss;
  const code = await main(['node', 'sessionfold', ...args]);
  const ms = performance.now() - start;
  const peak = peakRssBytes();
  process.send?.({ code, ms, rssGrowthMb: Math.max(0, peak - baseline) / 2 ** 20, peakRssMb: peak / 2 ** 20 });
}

/**
 * This process's own peak RSS. Linux carries getrusage's `maxRSS` over the exec that started this process, so
 * there it reports at least the bench parent's RSS at the fork (hundreds of MB after the fixtures were written);
 * /proc's VmHWM belongs to this process image alone.
 */
function peakRssBytes(): number {
  try {
    const found = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (found) return Number(found[1]) * 1024;
  } catch {
    // Not Linux: getrusage is all there is.
  }
  return process.resourceUsage().maxRSS * 1024;
}

run().catch((error: unknown) => {
  process.send?.({ error: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
});
