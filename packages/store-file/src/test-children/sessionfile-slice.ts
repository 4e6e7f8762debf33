// The part of @sessionfold/sessionfile the store uses, for crash children (see store-only.mjs).
export { writeFileAtomic, syncDirectory } from '../../../sessionfile/src/atomic-write.js';
export { AtomicWriteDirectorySyncError, SessionFileIoError } from '../../../sessionfile/src/errors.js';
