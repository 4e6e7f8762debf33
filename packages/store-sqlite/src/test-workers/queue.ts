// Enqueues jobs on shared queue streams, then claims and completes jobs of any worker, each step an append
// with the revision it read, so a claim that lost a race is retried against the new state.
import { ConcurrencyError, type EventStore } from '@sessionfold/core/kernel';
import { sqliteStore } from '../index.js';
import { barrier } from './barrier.js';

const [path, worker, queueList, jobsText, totalText, barrierStream, workersText] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];
const queues = queueList.split(',');
const total = Number(totalText);
const store = await sqliteStore({ path, busyTimeoutMs: 30_000 });
const say = (line: object) => process.stdout.write(`${JSON.stringify({ worker, ...line })}\n`);

await barrier(store, barrierStream, Number(workersText));

interface Queue {
  revision: number;
  enqueued: string[];
  claimedBy: Map<string, string>;
  completed: Set<string>;
}

async function fold(stream: string, source: EventStore): Promise<Queue> {
  const read = await source.read(stream);
  const queue: Queue = { revision: read.revision, enqueued: [], claimedBy: new Map(), completed: new Set() };
  for await (const event of read.events) {
    const { job, worker: by } = event.data as { job: string; worker: string };
    if (event.type === 'Enqueued') queue.enqueued.push(job);
    if (event.type === 'Claimed') queue.claimedBy.set(job, by);
    if (event.type === 'Completed') queue.completed.add(job);
  }
  return queue;
}

/** Appends one event at the revision just read; false when another process got there first. */
async function attempt(stream: string, revision: number, type: string, job: string): Promise<boolean> {
  try {
    const result = await store.append(stream, [{ type, data: { job, worker } }], { expectedRevision: revision === 0 ? 'no_stream' : revision });
    say({ kind: type, stream, job, ...result });
    return true;
  } catch (error) {
    if (error instanceof ConcurrencyError) return false;
    throw error;
  }
}

for (let index = 0; index < Number(jobsText); index++) {
  const stream = queues[index % queues.length] as string;
  const job = `${worker}-${index}`;
  while (!(await attempt(stream, (await store.read(stream)).revision, 'Enqueued', job)));
}

for (;;) {
  let completed = 0;
  for (const stream of queues) {
    const queue = await fold(stream, store);
    completed += queue.completed.size;
    const free = queue.enqueued.find((job) => !queue.claimedBy.has(job));
    if (free === undefined || !(await attempt(stream, queue.revision, 'Claimed', free))) continue;
    for (;;) {
      const now = await fold(stream, store);
      if (now.claimedBy.get(free) !== worker || now.completed.has(free)) throw new Error(`claim of ${free} lost after it was acknowledged`);
      if (await attempt(stream, now.revision, 'Completed', free)) break;
    }
    completed++;
  }
  if (completed >= total) break;
}
await store.close();
