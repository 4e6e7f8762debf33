import { SessionHistoryError } from './errors.js';

/**
 * The ingress retry loop's policy. It is applied when a failure or a release is decided, and the decision is
 * what the event records (`attempt`, `terminal`, `nextAttemptAt`, `retainedFailures`): replay folds what was
 * decided, so changing the policy never rewrites a session's history.
 */
export interface IngressPolicy {
  /** The attempt whose failure is terminal (`ingress_failed`); a failure coded `input_too_large` is terminal at once. */
  readonly failureLimit: number;
  /** Seconds from a non-terminal failure to its `nextAttemptAt`. */
  readonly retryDelaySeconds: number;
  /** How many of the latest failures a session keeps in `ingressFailures`. */
  readonly retainedFailures: number;
}

/** The default policy: terminal at the fifth failure, the next attempt 15 s after a failure, the last five failures kept. */
export const DEFAULT_INGRESS_POLICY: IngressPolicy = Object.freeze({ failureLimit: 5, retryDelaySeconds: 15, retainedFailures: 5 });

/** Longest retry delay accepted: a day (a later attempt is the application's own schedule, not a back-off). */
const MAX_RETRY_DELAY_SECONDS = 86_400;

/**
 * Parses the `ingressPolicy` option: any of the three fields, each a whole number (`failureLimit` and
 * `retainedFailures` ≥ 1, `retryDelaySeconds` from 0 to a day); the rest from `DEFAULT_INGRESS_POLICY`.
 */
export function ingressPolicy(option: unknown): IngressPolicy {
  if (option === undefined) return DEFAULT_INGRESS_POLICY;
  if (typeof option !== 'object' || option === null || Array.isArray(option)) {
    throw SessionHistoryError.invalid('ingressPolicy: expected { failureLimit?, retryDelaySeconds?, retainedFailures? }', 'ingressPolicy');
  }
  const given = option as Partial<Record<keyof IngressPolicy, unknown>>;
  for (const key of Object.keys(given)) {
    if (!(key in DEFAULT_INGRESS_POLICY)) throw SessionHistoryError.invalid(`ingressPolicy: unknown field ${JSON.stringify(key)}`, `ingressPolicy.${key}`);
  }
  const field = (name: keyof IngressPolicy, min: number, max: number): number => {
    const value = given[name] ?? DEFAULT_INGRESS_POLICY[name];
    if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
      throw SessionHistoryError.invalid(`ingressPolicy.${name}: expected a whole number from ${min} to ${max}`, `ingressPolicy.${name}`);
    }
    return value as number;
  };
  return Object.freeze({
    failureLimit: field('failureLimit', 1, Number.MAX_SAFE_INTEGER),
    retryDelaySeconds: field('retryDelaySeconds', 0, MAX_RETRY_DELAY_SECONDS),
    retainedFailures: field('retainedFailures', 1, Number.MAX_SAFE_INTEGER),
  });
}
