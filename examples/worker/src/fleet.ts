import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openSessionHistory, type EventStore, type JsonValue } from '@sessionfold/core';
import { backendArgument, openStore, type Backend } from './backend.js';
import { readJournal, type JournalEntry } from './journal.js';

/** The shape of one run: how much work, how many workers, and the lease each claim takes. */
export interface FleetOptions {
  sessions: number;
  commandsPerSession: number;
  workers: number;
  leaseMs: number;
  workMs: number;
}

export const DEFAULT_FLEET: FleetOptions = { sessions: 4, commandsPerSession: 3, workers: 3, leaseMs: 500, workMs: 50 };

/** What a run left behind: the journal the workers wrote, and what the store recorded. */
export interface FleetRun {
  /** The worker killed mid-command (always the first). */
  killed: string;
  /** The command it was running when it was killed. */
  killedCommand: string;
  journal: JournalEntry[];
  /** Every command the producer enqueued. */
  commands: string[];
  /** The outcomes the store recorded, by command: one `CommandCompleted` event each, if all went well. */
  outcomes: Map<string, JsonValue[]>;
  /** How each surviving worker ended (0: it found no open command left). */
  exitCodes: (number | null)[];
}

const workerFile = fileURLToPath(new URL('./worker.ts', import.meta.url));
const packageDir = fileURLToPath(new URL('..', import.meta.url));

/**
 * One producer enqueues the commands, then `workers` processes share them. The first worker goes first, hangs
 * in its first command and is killed with SIGKILL as soon as the journal shows it started; then the others
 * go, and must take that command over once its lease has run out.
 */
export async function runFleet(backend: Backend, dir: string, options: FleetOptions = DEFAULT_FLEET): Promise<FleetRun> {
  const commands = await produce(backend, options);
  const journalFile = join(dir, 'journal.log');
  const goFile = (name: string) => join(dir, `go-${name}`);
  const names = Array.from({ length: options.workers }, (_, index) => `worker-${index + 1}`);
  const killed = names[0] as string;
  const children = names.map((name) => startWorker(backend, journalFile, goFile(name), name, options, name === killed));
  try {
    // Opening a store takes a while under load, and a slow victim could find no command left: every worker
    // opens its store first, the victim goes alone, and the others go once it is dead.
    while (!names.every((name) => existsSync(`${goFile(name)}.ready`))) {
      const exited = children.find((child) => child.exitCode !== null);
      if (exited) throw new Error(`example-worker: a worker exited (${exited.exitCode}) before it was ready`);
      await sleep(10);
    }
    writeFileSync(goFile(killed), '');
    const killedCommand = await firstStart(journalFile, killed, children[0] as ChildProcess);
    children[0]?.kill('SIGKILL');
    for (const name of names.slice(1)) writeFileSync(goFile(name), '');
    const exitCodes = await Promise.all(children.slice(1).map(exitOf));
    const store = await openStore(backend);
    try {
      return { killed, killedCommand, journal: readJournal(journalFile), commands, outcomes: await recordedOutcomes(store), exitCodes };
    } finally {
      await store.close();
    }
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

/** The producer: `sessions` sessions with `commandsPerSession` commands each; returns the command ids. */
async function produce(backend: Backend, options: FleetOptions): Promise<string[]> {
  const store = await openStore(backend);
  const history = await openSessionHistory({ store });
  try {
    const ids: string[] = [];
    for (let s = 1; s <= options.sessions; s++) {
      const session = await history.start({ idempotencyId: `fleet-session-${s}`, startedAt: new Date().toISOString(), sessionType: 'worker-example' });
      for (let c = 1; c <= options.commandsPerSession; c++) {
        const command = await history.enqueue(session.value.id, { idempotencyId: `job-${c}`, kind: 'resize-image', payload: { session: s, job: c } });
        ids.push(command.value.id);
      }
    }
    return ids;
  } finally {
    await history.close();
    await store.close();
  }
}

function startWorker(backend: Backend, journal: string, go: string, name: string, options: FleetOptions, stall: boolean): ChildProcess {
  const args = ['--backend', backendArgument(backend), '--journal', journal, '--name', name, '--go', go];
  args.push('--lease-ms', String(options.leaseMs), '--work-ms', String(options.workMs));
  if (stall) args.push('--stall');
  // Node itself runs the worker (with tsx as a loader, not a wrapper process), so SIGKILL reaches the worker.
  return spawn(process.execPath, ['--conditions=sessionfold-source', '--import', 'tsx', workerFile, ...args], {
    cwd: packageDir,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/** The command `worker` started first, once the journal shows it; fails if the worker exits before. */
async function firstStart(journal: string, worker: string, child: ChildProcess): Promise<string> {
  for (;;) {
    const started = readJournal(journal).find((entry) => entry.event === 'started' && entry.worker === worker);
    if (started) return started.command;
    if (child.exitCode !== null) throw new Error(`example-worker: ${worker} exited (${child.exitCode}) before it started a command`);
    await sleep(10);
  }
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Every `CommandCompleted` event in the store, by command: the outcomes as recorded, not as any worker reported them. */
async function recordedOutcomes(store: EventStore): Promise<Map<string, JsonValue[]>> {
  const outcomes = new Map<string, JsonValue[]>();
  for await (const event of store.readAll()) {
    if (event.type !== 'CommandCompleted') continue;
    const data = event.data as { commandId: string; outcome: JsonValue };
    outcomes.set(data.commandId, [...(outcomes.get(data.commandId) ?? []), data.outcome]);
  }
  return outcomes;
}
