export * from './kernel/index.js';
export * from './session/index.js';
