import type { ObserverCall } from '../kernel/observer.js';
import type { EventStore } from '../kernel/port.js';
import type { BackgroundSettings } from './background-work.js';
import { compactionPolicy } from './compaction.js';
import { DEFAULT_CONTROL_STATE_KEYS } from './control-state.js';
import { dataCheckOf } from './data.js';
import type { DecisionOptions } from './decisions.js';
import { SessionHistoryError } from './errors.js';
import { ingressPolicy } from './ingress-policy.js';
import { observerOf, type SessionHistoryObserver } from './observer.js';
import { checkpointPolicy } from './projection-checkpoints.js';
import type { SessionHistoryOptions } from './service.js';

/** The options of `openSessionHistory`, checked, with their defaults filled in. */
export interface ServiceSettings extends BackgroundSettings {
  store: EventStore;
  /** The clock, refusing to record a time it did not return as a valid Date. */
  now: () => Date;
  random: () => number;
  observe: ObserverCall<SessionHistoryObserver>;
  decisionOptions: DecisionOptions;
}

/** Checks the options of `openSessionHistory` (`invalid_request` naming the option refused) and fills in the defaults. */
export function serviceSettings<S>(options: SessionHistoryOptions<S>): ServiceSettings {
  if (typeof options !== 'object' || options === null || typeof options.store?.append !== 'function') {
    throw SessionHistoryError.invalid('store: expected an EventStore', 'store');
  }
  if (options.clock !== undefined && typeof options.clock !== 'function')
    throw SessionHistoryError.invalid('clock: expected a function returning a Date', 'clock');
  if (options.random !== undefined && typeof options.random !== 'function')
    throw SessionHistoryError.invalid('random: expected a function returning a number in [0, 1)', 'random');
  const keyList: unknown = options.controlStateKeys;
  if (keyList !== undefined && (!Array.isArray(keyList) || keyList.some((key) => typeof key !== 'string' || key === '__proto__'))) {
    throw SessionHistoryError.invalid('controlStateKeys: expected an array of key names', 'controlStateKeys');
  }
  const compaction = compactionPolicy(options.compaction);
  const observe = observerOf(options.observer);
  if (options.completion !== undefined && options.completion !== 'keep' && options.completion !== 'archive-and-delete')
    throw SessionHistoryError.invalid("completion: expected 'keep' or 'archive-and-delete'", 'completion');
  if (options.controlState !== undefined && options.controlState !== 'strict' && options.controlState !== 'project')
    throw SessionHistoryError.invalid("controlState: expected 'strict' or 'project'", 'controlState');
  const checkData = dataCheckOf(options.validateData);
  const decisionOptions: DecisionOptions = {
    controlStateKeys: Object.freeze([...(options.controlStateKeys ?? DEFAULT_CONTROL_STATE_KEYS)]),
    ingressPolicy: ingressPolicy(options.ingressPolicy),
    controlState: options.controlState ?? 'strict',
    completion: options.completion ?? 'keep',
    checkData,
  };
  if (options.follow !== undefined && typeof options.follow !== 'boolean') throw SessionHistoryError.invalid('follow: expected a boolean', 'follow');
  const readOnly = options.readOnly === true;
  const checkpoints = checkpointPolicy(options.checkpoints);
  const clock = options.clock ?? (() => new Date());
  const now = (): Date => {
    const value = clock();
    if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new TypeError('the clock returned an invalid Date');
    return value;
  };
  const follow = options.follow ?? !readOnly;
  return { store: options.store, now, random: options.random ?? Math.random, observe, decisionOptions, compaction, checkpoints, follow, readOnly };
}
