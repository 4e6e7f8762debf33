import type { FleetRun } from './fleet.js';
import type { JournalEntry } from './journal.js';

/** Two runs of one command whose leases overlapped: the second started while the first's lease still held. */
export interface Overlap {
  command: string;
  first: string;
  second: string;
}

/** How the killed worker's command ended: who took it over, and whether that was after the dead worker's lease. */
export interface Takeover {
  command: string;
  by: string | undefined;
  afterLease: boolean;
}

/** Commands with no recorded outcome, or with more than one. */
export function outcomeProblems(run: FleetRun): string[] {
  return run.commands.filter((command) => (run.outcomes.get(command) ?? []).length !== 1);
}

/**
 * Every pair of consecutive starts of one command by different workers where the second began before the
 * first's lease ran out. The times are the service's own decisions, as the claims returned them.
 */
export function liveLeaseOverlaps(journal: JournalEntry[]): Overlap[] {
  const starts = new Map<string, Extract<JournalEntry, { event: 'started' }>[]>();
  for (const entry of journal) if (entry.event === 'started') starts.set(entry.command, [...(starts.get(entry.command) ?? []), entry]);
  const overlaps: Overlap[] = [];
  for (const [command, runs] of starts) {
    runs.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    for (let index = 1; index < runs.length; index++) {
      const [before, after] = [runs[index - 1], runs[index]];
      if (before && after && before.worker !== after.worker && Date.parse(after.at) < Date.parse(before.leaseUntil)) {
        overlaps.push({ command, first: before.worker, second: after.worker });
      }
    }
  }
  return overlaps;
}

/** Who ran the killed worker's command to its end, and whether they started only once its lease had run out. */
export function takeoverOf(run: FleetRun): Takeover {
  const starts = run.journal.filter(
    (entry): entry is Extract<JournalEntry, { event: 'started' }> => entry.event === 'started' && entry.command === run.killedCommand,
  );
  const dead = starts.find((entry) => entry.worker === run.killed);
  const finisher = run.journal.find((entry) => entry.event === 'finished' && entry.command === run.killedCommand);
  const taken = starts.find((entry) => entry.worker === finisher?.worker);
  return {
    command: run.killedCommand,
    by: finisher?.worker,
    afterLease: dead !== undefined && taken !== undefined && Date.parse(taken.at) >= Date.parse(dead.leaseUntil),
  };
}

/** The lines the example prints about a run: the same words on every run that went right. */
export function report(run: FleetRun): string[] {
  const total = run.commands.length;
  const once = total - outcomeProblems(run).length;
  const overlaps = liveLeaseOverlaps(run.journal);
  const takeover = takeoverOf(run);
  const workers = run.exitCodes.length + 1;
  return [
    `${total} commands, ${workers} workers; ${run.killed} was killed (SIGKILL) in the middle of a command`,
    `commands with exactly one recorded outcome: ${once} of ${total}`,
    overlaps.length === 0 ? 'no command was started while another worker held a live lease on it' : `LEASE OVERLAPS: ${JSON.stringify(overlaps)}`,
    takeover.by !== undefined && takeover.by !== run.killed && takeover.afterLease
      ? `the killed worker's command was taken over by another worker after its lease ran out`
      : `the killed worker's command was NOT taken over after its lease: ${JSON.stringify(takeover)}`,
    run.exitCodes.every((code) => code === 0) ? 'the other workers stopped when no command was left' : `workers exited with ${JSON.stringify(run.exitCodes)}`,
  ];
}

/** Whether the run kept every promise `report` states. */
export function passed(run: FleetRun): boolean {
  const takeover = takeoverOf(run);
  return (
    outcomeProblems(run).length === 0 &&
    liveLeaseOverlaps(run.journal).length === 0 &&
    takeover.by !== undefined &&
    takeover.by !== run.killed &&
    takeover.afterLease &&
    run.exitCodes.every((code) => code === 0)
  );
}
