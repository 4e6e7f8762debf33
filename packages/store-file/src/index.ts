export { fileStore, type FileEventStore, type FileStoreOptions } from './log/log-store.js';
export type { FileSystem } from './fs-layer.js';
