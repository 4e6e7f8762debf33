import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RawRead } from '../raw-limits.js';
import { fillStream, withStore, type Measurement, type Scenario } from '../scenario.js';
import { median, perSecond, timeInFlight } from '../stats.js';

/** What the child reports of one command. */
interface CliRun {
  code: number;
  ms: number;
  rssGrowthMb: number;
}

const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** Runs `sessionfold args` in a fresh child process with this process's loader flags; stdout is discarded. */
function runCli(args: readonly string[]): Promise<CliRun> {
  const child = fork(fileURLToPath(new URL(`../cli-child${extension}`, import.meta.url)), [JSON.stringify(args)], {
    execArgv: process.execArgv,
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
 * over the read scenarios' volumes, against the raw read of the same events: the command adds JSON output
 * (and, for verify, a second pass over the files) to what the store reads.
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
      let failed: number | undefined;
      for (let repeat = 0; repeat < Math.max(1, context.volumes.readRepeats); repeat++) {
        const raw = await raws[command.raw]();
        rawRates.push(perSecond(raw.events, raw.ms));
        const ran = await runCli(command.args(url));
        if (ran.code !== 0) failed = ran.code;
        rates.push(perSecond(events, ran.ms));
        rss = Math.max(rss, ran.rssGrowthMb);
      }
      measurements.push({
        rate: median(rates),
        rawRate: median(rawRates),
        rssGrowthMb: rss,
        variant: { id: command.id, title: command.title },
        ...(failed === undefined ? {} : { note: `the command exited with ${failed}` }),
      });
    }
    return measurements;
  },
};
