/**
 * The harness that holds every store to one observable behaviour of the session service: a plain-data
 * model of service calls, a runner that drives the service on one store, and the normalisation that makes
 * two stores' answers comparable.
 */
export * from './calls.js';
export * from './observe.js';
export * from './subjects.js';
export * from './runner.js';
