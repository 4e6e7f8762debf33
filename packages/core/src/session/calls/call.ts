import type { z } from 'zod';
import { InvalidInputError } from '../../kernel/errors.js';
import type { ObserverCall } from '../../kernel/observer.js';
import type { StreamId } from '../../kernel/port.js';
import { SessionHistoryError, messages } from '../errors.js';
import { sessionStream } from '../ids.js';
import { parseInput, sessionIdSchema } from '../inputs.js';
import { storageFailureReporter, type SessionHistoryObserver } from '../observer.js';

/** One argument of a service method: the name its refusals give it (`''` for an object whose fields name themselves) and its schema. */
export type Argument<Z extends z.ZodType = z.ZodType> = readonly [name: string, schema: Z];

/** The parsed values of arguments `A`, in order. */
type Parsed<A extends readonly Argument[]> = { -readonly [K in keyof A]: A[K] extends Argument<infer Z> ? z.output<Z> : never };

/** A session id argument, parsed to its session's stream. */
export const sessionArgument = ['id', sessionIdSchema.transform((id): StreamId => sessionStream(id))] as const satisfies Argument;

/** An object argument: a refusal names the field (`expectedVersion`), not the argument. */
export function inputArgument<Z extends z.ZodType>(schema: Z): Argument<Z> {
  return ['', schema];
}

/** Parses one argument on its own, where a method parses it only on some paths. */
export function parseArgument<Z extends z.ZodType>([name, schema]: Argument<Z>, value: unknown): z.output<Z> {
  return parseInput(schema, value, name);
}

/**
 * How every method of the service runs: its arguments parsed with their schemas, then its work, while the service
 * is open. A call rejects only with `SessionHistoryError`: a store's refusal of an event as `invalid_request`, any
 * other unexpected failure as `internal_error`, which the observer hears of (`storageFailed`).
 */
export class ServiceCalls {
  readonly #report: (error: SessionHistoryError) => SessionHistoryError;
  readonly #readOnly: boolean;
  #closed = false;

  /** A `readOnly` service refuses every method that writes (see `write`). */
  constructor(observe: ObserverCall<SessionHistoryObserver>, readOnly: boolean) {
    this.#report = storageFailureReporter(observe);
    this.#readOnly = readOnly;
  }

  /** `call` for a method that writes: a read-only service refuses it with `invalid_request`, whatever its arguments. */
  write<const A extends readonly Argument[], T>(args: A, handler: (...values: Parsed<A>) => Promise<T>): (...values: unknown[]) => Promise<T> {
    return this.#readOnly ? () => Promise.reject(SessionHistoryError.invalid(messages.readOnly)) : this.call(args, handler);
  }

  /** A method taking `args`: parses them in order (the first refused rejects the call), then runs `handler` on their values. */
  call<const A extends readonly Argument[], T>(args: A, handler: (...values: Parsed<A>) => Promise<T>): (...values: unknown[]) => Promise<T> {
    return (...values) => {
      let parsed: Parsed<A>;
      try {
        parsed = args.map(([name, schema], index) => parseInput(schema, values[index], name)) as Parsed<A>;
      } catch (error) {
        return Promise.reject(this.#translate(error));
      }
      return this.run(() => handler(...parsed));
    };
  }

  /** Runs `operation` unless the service is closed; a failure rejects as a `SessionHistoryError`. */
  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.#closed) throw SessionHistoryError.invalid(messages.closed);
    try {
      return await operation();
    } catch (error) {
      throw this.#translate(error);
    }
  }

  /** Refuses every later call; false when the service was closed already. */
  close(): boolean {
    const open = !this.#closed;
    this.#closed = true;
    return open;
  }

  #translate(error: unknown): SessionHistoryError {
    if (error instanceof SessionHistoryError) return this.#report(error);
    if (error instanceof InvalidInputError) return SessionHistoryError.invalid(`Session History refused the input: ${error.message}`, error.field);
    return this.#report(SessionHistoryError.internal(error));
  }
}
