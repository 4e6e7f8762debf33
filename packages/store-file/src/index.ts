export { fileStore, type FileStoreOptions } from './file-store.js';
export type { FileSystem } from './fs-layer.js';
