import { existsSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { openSessionHistory, SessionHistoryError, type SessionCommand, type SessionHistory } from '@sessionfold/core';
import { openStore, parseBackendArgument } from './backend.js';
import { record } from './journal.js';

// One worker process: `worker.ts --backend sqlite:<file> --journal <file> --name <worker> --go <file> [--stall]`.
// Once its store is open it writes `<go>.ready` and waits until the go file exists, then polls the command
// heads, claims each with a lease, runs it and completes it, until no session has an open command. `--stall`
// makes it hang in its first command, so the fleet can kill it mid-command.
const { values } = parseArgs({
  options: {
    backend: { type: 'string' },
    journal: { type: 'string' },
    name: { type: 'string' },
    go: { type: 'string' },
    'lease-ms': { type: 'string', default: '500' },
    'work-ms': { type: 'string', default: '50' },
    'poll-ms': { type: 'string', default: '25' },
    stall: { type: 'boolean', default: false },
  },
});
const { backend, journal, name: worker, go } = values;
if (!backend || !journal || !worker || !go) throw new Error('example-worker: worker needs --backend, --journal, --name and --go');
const leaseMs = Number(values['lease-ms']);
const workMs = Number(values['work-ms']);
const pollMs = Number(values['poll-ms']);
const CLAIMED_BY_OTHER = 'Command is claimed by another worker.';
// A worker that outlives this is stuck; failing beats hanging the fleet.
const giveUpAt = Date.now() + 60_000;

const store = await openStore(parseBackendArgument(backend));
const history = await openSessionHistory({ store });
try {
  writeFileSync(`${go}.ready`, '');
  while (!existsSync(go)) await sleep(5);
  await work(history, journal, worker);
} finally {
  await history.close();
  await store.close();
}

async function work(history: SessionHistory, journal: string, worker: string): Promise<void> {
  let stallNext = values.stall;
  for (;;) {
    if (Date.now() > giveUpAt) throw new Error(`example-worker: ${worker} gave up with commands still open`);
    const heads = await history.commandHeads();
    if (heads.length === 0) return;
    let ran = false;
    for (const head of heads) {
      const claimed = await claim(history, head, journal, worker);
      if (!claimed) continue;
      record(journal, {
        event: 'started',
        command: head.id,
        worker: worker,
        at: claimed.processingStartedAt ?? '',
        leaseUntil: claimed.leaseUntil ?? '',
      });
      if (stallNext) await sleep(3_600_000);
      stallNext = false;
      await sleep(workMs);
      try {
        await history.completeCommand(head.id, { outcome: { ranBy: worker, kind: head.kind, payload: head.payload }, worker });
        record(journal, { event: 'finished', command: head.id, worker: worker });
      } catch (error) {
        // Another worker took the command over after this one's lease ran out: its outcome is the one recorded.
        if (!(error instanceof SessionHistoryError && error.code === 'state_conflict')) throw error;
        record(journal, { event: 'lost', command: head.id, worker: worker });
      }
      ran = true;
    }
    if (!ran) await sleep(pollMs);
  }
}

/** The claimed command, or undefined when another worker's live lease holds it (journaled as refused) or it finished meanwhile. */
async function claim(history: SessionHistory, head: SessionCommand, journal: string, worker: string): Promise<SessionCommand | undefined> {
  try {
    return await history.claimCommand(head.id, { worker: worker, leaseMs });
  } catch (error) {
    if (!(error instanceof SessionHistoryError && error.code === 'state_conflict')) throw error;
    if (error.message === CLAIMED_BY_OTHER) record(journal, { event: 'refused', command: head.id, worker: worker });
    return undefined;
  }
}
