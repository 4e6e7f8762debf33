import { ConcurrencyError, InvalidInputError, type AppendResult, type ExpectedRevision, type StreamId } from '@sessionfold/core/kernel';
import type { ValidatedEvent } from '@sessionfold/core/store-kit';

/** One append waiting for the next shared round trip: exactly what validation read, written as it is. */
export interface AppendJob {
  stream: StreamId;
  expected: ExpectedRevision;
  rows: readonly ValidatedEvent[];
  /** UTF-8 bytes of the rows' types and data, for the store's observer (0 without one). */
  bytes: number;
}

/** What the database answered for one job (see `append_batches`). */
export interface JobAnswer {
  status: number;
  revision: number;
  position: number | null;
}

/** Runs a group of jobs as one statement; resolves with one answer per job, in order, or rejects for all. */
export type RunGroup = (jobs: readonly AppendJob[]) => Promise<readonly JobAnswer[]>;

interface Pending {
  job: AppendJob;
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

/** Most appends in one round trip, and most event bytes: bounds the statement's size and the server's memory. */
const MAX_JOBS = 512;
const MAX_BYTES = 16 * 1024 * 1024;

/**
 * Shares round trips and commits between the appends in flight in one process. An append is queued, and
 * the queue is sent by `setImmediate`, after every append issued in the same turn of the event loop; while a
 * group is at the server, new appends gather into the next one, which is sent as soon as the first returns.
 * There is no timer: a lone append goes out in the turn it was issued. The group is one call of the
 * `append_batches` function, so one transaction: each append is checked against the stream as the appends
 * before it in the group left it, an append that is refused (conflict, known event id) writes nothing and
 * fails alone, and every caller is answered after the shared commit. A failure of the statement itself (a
 * lost connection) fails every append of the group: the transaction was rolled back, or its commit is unknown.
 */
export class GroupCommit {
  readonly #run: RunGroup;
  readonly #translate: (error: unknown) => Error;
  #queue: Pending[] = [];
  #scheduled = false;
  #inFlight: Promise<void> | undefined;

  constructor(run: RunGroup, translate: (error: unknown) => Error) {
    this.#run = run;
    this.#translate = translate;
  }

  /** Queues an append for the next group; resolves with its result once the group committed. */
  submit(job: AppendJob): Promise<AppendResult> {
    return new Promise<AppendResult>((resolve, reject) => {
      this.#queue.push({ job, resolve, reject });
      if (!this.#scheduled && this.#inFlight === undefined) {
        this.#scheduled = true;
        setImmediate(() => this.#send());
      }
    });
  }

  /** Resolves once every append accepted so far has been answered. */
  async drain(): Promise<void> {
    while (this.#inFlight !== undefined || this.#queue.length > 0) {
      if (this.#inFlight === undefined) this.#send();
      await this.#inFlight;
    }
  }

  #send(): void {
    this.#scheduled = false;
    if (this.#inFlight !== undefined || this.#queue.length === 0) return;
    const group = this.#take();
    this.#inFlight = this.#answer(group).finally(() => {
      this.#inFlight = undefined;
      // What arrived meanwhile goes out at once: it has already waited for one round trip.
      if (this.#queue.length > 0) this.#send();
    });
  }

  #take(): Pending[] {
    let bytes = 0;
    let count = 0;
    while (count < this.#queue.length && count < MAX_JOBS) {
      const rows = (this.#queue[count] as Pending).job.rows;
      for (const row of rows) bytes += row.dataJson.length + row.type.length;
      count++;
      if (bytes >= MAX_BYTES) break;
    }
    return this.#queue.splice(0, count);
  }

  async #answer(group: readonly Pending[]): Promise<void> {
    let answers: readonly JobAnswer[];
    try {
      answers = await this.#run(group.map((pending) => pending.job));
    } catch (error) {
      const failure = this.#translate(error);
      for (const pending of group) pending.reject(failure);
      return;
    }
    group.forEach((pending, index) => {
      const answer = answers[index];
      if (answer === undefined) pending.reject(this.#translate(new Error(`append_batches returned ${answers.length} rows for ${group.length} appends`)));
      else settle(pending, answer);
    });
  }
}

function settle({ job, resolve, reject }: Pending, answer: JobAnswer): void {
  switch (answer.status) {
    case 0:
    case 1:
      resolve({ revision: answer.revision, position: answer.position as number });
      return;
    case 2:
      reject(new ConcurrencyError(job.stream, job.expected, answer.revision));
      return;
    case 3: {
      const index = answer.revision;
      const row = job.rows[index] as ValidatedEvent;
      reject(new InvalidInputError(`events[${index}].eventId`, `${JSON.stringify(row.eventId)} is already in stream ${job.stream}`));
      return;
    }
    default:
      reject(new Error(`append_batches answered with unknown status ${answer.status}`));
  }
}
