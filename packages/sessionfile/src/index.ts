export {
  writeFileAtomic,
  syncDirectory,
  DIRECTORY_MODE,
  FILE_MODE,
  type AtomicWriteOptions,
  type AtomicWriteFs,
  type AtomicWriteFileHandle,
} from './atomic-write.js';
export {
  SessionFileError,
  SessionFileIoError,
  DestinationIsDirectoryError,
  AtomicWriteDirectorySyncError,
  SessionFileInvalidError,
  SessionIdentityMismatchError,
  WAYS_OUT,
  type IoOperation,
} from './errors.js';
