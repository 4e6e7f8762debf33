import { SessionfoldError } from '@sessionfold/core/kernel';

/** The transaction statements group commit drives; one connection, used only by the queue while it flushes. */
export interface TransactionControl {
  beginImmediate(): void;
  commit(): void;
  rollback(): void;
  savepoint(): void;
  release(): void;
  rollbackToSavepoint(): void;
  inTransaction(): boolean;
}

/** How a job may fail, which decides whether it needs a savepoint of its own. */
export interface JobOptions {
  /**
   * True when the job may throw a port error after it has written something (e.g. it relies on a unique
   * index to refuse a duplicate). Such a job runs inside a savepoint, so its writes can be undone alone.
   * A job that does every check before its first write needs none: when it throws, nothing is to undo,
   * and SQLite copies each page a savepoint touches, which would cost every append in the flush.
   */
  mayFailAfterWriting?: boolean;
}

interface Job {
  work: () => unknown;
  savepoint: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Commits the writes that are in flight together in one transaction. better-sqlite3 is synchronous, so a
 * commit per write would pay one flush to disk each; instead a write is queued and the queue is flushed by
 * `setImmediate`: after every write issued in the same turn of the event loop, including those of other
 * I/O callbacks of that turn (requests that arrived together). A microtask would flush after the first
 * callback alone. There is no timer: a lone write still commits in the turn it was issued. A job that fails with a port error (a conflict, an invalid input) fails alone: it threw
 * before writing, or it ran in its own savepoint and is rolled back to it. Any other failure (I/O, a full
 * disk, the lock) fails the whole flush, since SQLite may already have rolled the transaction back.
 * Callers are answered only after the shared COMMIT returned.
 */
export class GroupCommit {
  readonly #tx: TransactionControl;
  readonly #translate: (error: unknown) => Error;
  #queue: Job[] = [];
  #scheduled = false;

  constructor(tx: TransactionControl, translate: (error: unknown) => Error) {
    this.#tx = tx;
    this.#translate = translate;
  }

  /** Queues `work` to run inside the next shared write transaction; resolves with its result after the commit. */
  submit<T>(work: () => T, options: JobOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, savepoint: options.mayFailAfterWriting === true, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs every queued job now (the store calls it before closing). */
  flush(): void {
    this.#scheduled = false;
    const jobs = this.#queue;
    this.#queue = [];
    if (jobs.length === 0) return;
    const outcomes = this.#runAll(jobs);
    jobs.forEach((job, index) => {
      const outcome = outcomes[index] as Outcome;
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.error);
    });
  }

  #runAll(jobs: readonly Job[]): Outcome[] {
    const tx = this.#tx;
    try {
      tx.beginImmediate();
    } catch (error) {
      const failure = this.#translate(error);
      return jobs.map(() => ({ ok: false, error: failure }));
    }
    const lone = jobs.length === 1;
    const outcomes: Outcome[] = [];
    try {
      for (const job of jobs) {
        // A lone job needs no savepoint: if it fails, the whole transaction is rolled back below.
        const savepoint = job.savepoint && !lone;
        if (savepoint) tx.savepoint();
        try {
          outcomes.push({ ok: true, value: job.work() });
          if (savepoint) tx.release();
        } catch (error) {
          if (!(error instanceof SessionfoldError)) throw error;
          outcomes.push({ ok: false, error });
          if (savepoint) {
            tx.rollbackToSavepoint();
            tx.release();
          }
        }
      }
      if (outcomes.some((outcome) => outcome.ok)) tx.commit();
      else tx.rollback();
      return outcomes;
    } catch (error) {
      const failure = this.#translate(error);
      try {
        if (tx.inTransaction()) tx.rollback();
      } catch {
        // The connection already undid the transaction; the original failure is the one to report.
      }
      return jobs.map(() => ({ ok: false, error: failure }));
    }
  }
}
