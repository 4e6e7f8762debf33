import type { EventStore } from '@sessionfold/core/kernel';
import { CliError, ExitCode } from './exit-codes.js';

/**
 * Ctrl-C (SIGINT) or SIGTERM while a command that moves many streams runs: the command finishes the stream it
 * is on and stops before the next, so whatever it wrote is whole. A second Ctrl-C ends the process at once.
 */
export class Interruption {
  #requested = false;
  readonly #onSignal = () => {
    this.#requested = true;
    this.#release();
  };

  constructor() {
    process.once('SIGINT', this.#onSignal);
    process.once('SIGTERM', this.#onSignal);
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

  /** Gives Ctrl-C back its default: ending the process. */
  dispose(): void {
    this.#release();
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
