export * from './json.js';
export * from './errors.js';
export * from './port.js';
export * from './validate.js';
export * from './memory-store.js';
export * from './fold.js';
export * from './capabilities.js';
export * from './follow.js';
