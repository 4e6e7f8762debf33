import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { RawRead } from '../raw-limits.js';
import { fillStream, withStore, type Measurement, type Scenario } from '../scenario.js';
import { median, perSecond, timeInFlight } from '../stats.js';

/** What the child reports of one command. */
interface CliRun {
  code: number;
  ms: number;
  rssGrowthMb: number;
  peakRssMb: number;
}

/**
 * The child's built entry, run with no loader flags: it loads the built CLI (`packages/cli/dist`) as an installed
 * `sessionfold` does, not TypeScript sources compiled as they load. `npx tsc -b` builds both.
 */
const CHILD = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../../dist/cli-child.js' : '../cli-child.js', import.meta.url));

/** Runs `sessionfold args` in a fresh child process; its stdout is /dev/null, so the command writes all it prints. */
function runCli(args: readonly string[]): Promise<CliRun> {
  if (!existsSync(CHILD)) return Promise.reject(new Error(`bench: ${CHILD} is missing: build first (npx tsc -b)`));
  const child = fork(CHILD, [JSON.stringify(args)], {
    execArgv: [],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let answered = false;
    child.once('message', (message: Partial<CliRun> & { error?: string }) => {
      answered = true;
      if (message.error !== undefined || message.ms === undefined) reject(new Error(message.error ?? 'bench: the CLI child sent nothing'));
      else resolve(message as CliRun);
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (!answered) reject(new Error(`bench: the CLI child exited with code ${code}`));
    });
  });
}

/** The CLI's streaming commands, each with the raw read it is compared with. */
const COMMANDS = [
  { id: 'cli-read', title: 'CLI read, 1 stream', raw: 'replay' as const, args: (url: string) => ['read', 'cli-read', '-s', url] },
  { id: 'cli-tail', title: 'CLI tail, 1,000 streams', raw: 'readAll' as const, args: (url: string) => ['tail', '-s', url] },
  { id: 'cli-export', title: 'CLI export, 1,000 streams', raw: 'readAll' as const, args: (url: string) => ['export', '-s', url] },
  { id: 'cli-verify', title: 'CLI verify, 1,000 streams', raw: 'readAll' as const, args: (url: string) => ['verify', '--quiet', '-s', url] },
];

/**
 * The `sessionfold` command's streaming reads (`read`, `tail`, `export`, `verify`), each run as its own process
 * of the built CLI over the read scenarios' volumes, against the raw read of the same events in this process:
 * the command adds process start, opening the store, and JSON output written to /dev/null (a pipe's reader
 * would add its own work, not the command's). Each row notes the child's absolute peak RSS.
 */
export const cliReads: Scenario = {
  id: 'cli',
  title: 'CLI reads',
  unit: 'events/s',
  requires: ['storeUrl', 'readAll'],
  rawOperation: 'readAll',
  limitText: 'raw replay (read) or raw readAll (tail, export, verify) of the same events',
  async run(context, subject) {
    const { readAllEvents, readAllStreams: streams, fillBatch } = context.volumes;
    const per = Math.ceil(readAllEvents / streams);
    const dir = await context.dir('cli');
    await withStore(subject, dir, async (store) => {
      const workers = subject.lacks.concurrentAppends ? 1 : Math.min(64, streams);
      await timeInFlight(streams, workers, (_worker, _call, index) => fillStream(store, `all-${index}`, per, fillBatch));
      await fillStream(store, 'cli-read', readAllEvents, fillBatch);
    });
    const family = context.raw.family(subject.raw);
    const raws: Record<'replay' | 'readAll', () => Promise<RawRead>> = {
      replay: await family.replay(await context.dir('cli-raw-replay'), readAllEvents),
      readAll: await family.readAll(await context.dir('cli-raw-all'), per * streams, streams),
    };
    const url = (subject.url as (dir: string) => string)(dir);
    const measurements: Measurement[] = [];
    for (const command of COMMANDS) {
      const events = command.raw === 'replay' ? readAllEvents : per * streams + readAllEvents;
      const rates: number[] = [];
      const rawRates: number[] = [];
      let rss = 0;
      let peak = 0;
      let failed: number | undefined;
      for (let repeat = 0; repeat < Math.max(1, context.volumes.readRepeats); repeat++) {
        const raw = await raws[command.raw]();
        rawRates.push(perSecond(raw.events, raw.ms));
        const ran = await runCli(command.args(url));
        if (ran.code !== 0) failed = ran.code;
        rates.push(perSecond(events, ran.ms));
        rss = Math.max(rss, ran.rssGrowthMb);
        peak = Math.max(peak, ran.peakRssMb);
      }
      measurements.push({
        rate: median(rates),
        rawRate: median(rawRates),
        rssGrowthMb: rss,
        variant: { id: command.id, title: command.title },
        note: failed === undefined ? `peak RSS ${peak.toFixed(0)} MB` : `the command exited with ${failed}`,
      });
    }
    return measurements;
  },
};
