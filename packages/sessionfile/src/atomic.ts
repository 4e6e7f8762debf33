// The atomic writer alone, for callers (such as the file store) that need it without the session-file schemas.
export * from './atomic-write.js';
export * from './errors.js';
