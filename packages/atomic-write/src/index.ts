export {
  writeFileAtomic,
  syncDirectory,
  temporarySibling,
  isTemporaryName,
  DIRECTORY_MODE,
  FILE_MODE,
  type AtomicWriteOptions,
  type AtomicWriteFs,
  type AtomicWriteFileHandle,
} from './atomic-write.js';
export { errorCode } from './error-code.js';
export { AtomicWriteError, AtomicWriteIoError, DestinationIsDirectoryError, AtomicWriteDirectorySyncError, type IoOperation } from './errors.js';
