import type { EventStore } from '@sessionfold/core/kernel';
import { CliError, ExitCode } from './exit-codes.js';

/**
 * How long a command has, after Ctrl-C or SIGTERM, to reach its next stopping point before the process ends
 * anyway: a command waiting on a reader that never reads, or on a read that never returns, reaches none.
 */
export const STOP_GRACE_MS = 3000;

/**
 * Ctrl-C (SIGINT) or SIGTERM while a command that moves many streams runs: the command finishes the stream it
 * is on and stops before the next, so whatever it wrote is whole. A command that does not get there within
 * `STOP_GRACE_MS` (it waits on a full pipe, or on a file that never answers) is ended then, after its cleanups;
 * a second Ctrl-C ends the process at once.
 */
export class Interruption {
  #requested = false;
  readonly #cleanups: (() => void)[] = [];
  #deadline: NodeJS.Timeout | undefined;
  readonly #abort = new AbortController();
  readonly #onSignal = () => {
    this.#requested = true;
    this.#release();
    this.#abort.abort();
    // Unref'd: a command that stops in time ends the process as usual, not at the deadline.
    this.#deadline = setTimeout(() => this.#end(), STOP_GRACE_MS).unref();
  };

  constructor() {
    process.once('SIGINT', this.#onSignal);
    process.once('SIGTERM', this.#onSignal);
  }

  /** Fires when a stop is asked for, for work that waits (a follow) rather than loops. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Whether a stop was asked for. */
  get requested(): boolean {
    return this.#requested;
  }

  /**
   * Gives the event loop a turn, where a signal is seen, then throws the interruption if a stop was asked for. A
   * store that answers without waiting for I/O (better-sqlite3) would otherwise keep a loop from ever seeing one.
   */
  async between(done: string, hint?: string): Promise<void> {
    await turn();
    this.check(done, hint);
  }

  /** Throws the interruption (exit 130) if a stop was asked for; `done` says what is complete, e.g. "3 stream(s)". */
  check(done: string, hint?: string): void {
    if (!this.#requested) return;
    throw new CliError(ExitCode.interrupted, `interrupted: stopped after ${done}`, hint === undefined ? undefined : { hint });
  }

  /** Runs `cleanup` (synchronous: the event loop may be stuck) if the process has to be ended at the deadline. */
  onForcedEnd(cleanup: () => void): void {
    this.#cleanups.push(cleanup);
  }

  /** Gives Ctrl-C back its default: ending the process. */
  dispose(): void {
    this.#release();
    if (this.#deadline) clearTimeout(this.#deadline);
  }

  #end(): never {
    for (const cleanup of this.#cleanups.splice(0)) {
      try {
        cleanup();
      } catch {
        // Ending is what was asked for; a cleanup that fails must not keep the process alive.
      }
    }
    process.stderr.write(`error: interrupted: the command did not reach a point to stop at within ${STOP_GRACE_MS / 1000} s of the signal, and was ended\n`);
    process.exit(ExitCode.interrupted);
  }

  #release(): void {
    process.off('SIGINT', this.#onSignal);
    process.off('SIGTERM', this.#onSignal);
  }
}

/** Runs `work` with an interruption listening for Ctrl-C, and gives Ctrl-C back its default after. */
export async function interruptible<T>(work: (interruption: Interruption) => Promise<T>): Promise<T> {
  const interruption = new Interruption();
  try {
    return await work(interruption);
  } finally {
    interruption.dispose();
  }
}

/** Resolves after the event loop's next turn. */
export function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * `store` with a `streams()` that gives the event loop a turn before each stream, so that Ctrl-C is seen while a
 * loop the CLI does not own (`copyStore`) goes through a store that answers without waiting for I/O.
 */
export function turnPerStream(store: EventStore): EventStore {
  return new Proxy(store, {
    get(target, key) {
      if (key !== 'streams') {
        // Bound to the store itself: a store class's private fields are not reachable through the proxy.
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return async function* (...args: Parameters<EventStore['streams']>) {
        for await (const entry of target.streams(...args)) {
          await turn();
          yield entry;
        }
      };
    },
  });
}
