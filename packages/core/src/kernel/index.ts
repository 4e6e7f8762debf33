export * from './json.js';
export * from './errors.js';
export * from './port.js';
export * from './validate.js';
export * from './memory-store.js';
export * from './fold.js';
// `checkSnapshotVersion` stays internal: `checkSnapshotIdentity` is its public form.
export { prepareReducer, type EventUpcaster, type EventUpcasters, type PreparedReducer, type StateMigration } from './versioning.js';
export * from './capabilities.js';
export * from './follow.js';
export * from './paged-events.js';
export * from './ready-items.js';
export * from './observer.js';
export * from './stored-events.js';
