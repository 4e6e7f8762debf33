// The atomic writer alone, for callers that need it without the session-file schemas; it lives in @sessionfold/atomic-write.
export {
  writeFileAtomic,
  syncDirectory,
  DIRECTORY_MODE,
  FILE_MODE,
  type AtomicWriteOptions,
  type AtomicWriteFs,
  type AtomicWriteFileHandle,
} from '@sessionfold/atomic-write';
export * from './errors.js';
