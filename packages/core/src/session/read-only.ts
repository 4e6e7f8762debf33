import { SessionHistoryError, messages } from './errors.js';
import type { SessionHistory } from './service.js';

/** The methods that write; a read-only service refuses them all. */
const MUTATING_METHODS = [
  'start',
  'register',
  'enqueue',
  'claimCommand',
  'completeCommand',
  'cancelCommand',
  'stop',
  'appendTranscript',
  'stageObject',
  'checkpoint',
  'requestIngress',
  'startIngress',
  'completeIngress',
  'failIngress',
  'retryIngress',
  'releaseInterruptedIngress',
  'complete',
  'recordCompletion',
  'deleteSession',
] as const satisfies readonly (keyof SessionHistory)[];

/** `service` with every method that would write replaced by one that rejects with `invalid_request`. */
export function refusingWrites<S>(service: SessionHistory<S>): SessionHistory<S> {
  const refuse = () => Promise.reject(SessionHistoryError.invalid(messages.readOnly));
  return { ...service, ...Object.fromEntries(MUTATING_METHODS.map((name) => [name, refuse])) };
}
