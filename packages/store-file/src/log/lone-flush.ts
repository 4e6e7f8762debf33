import { fdatasyncSync } from 'node:fs';

/**
 * Syncs the flush of a lone write on the calling thread: with nothing else queued, the thread-pool round trip of
 * an asynchronous fdatasync is pure delay. Used only with the real file system (injected faults go through
 * `FileSystem.fdatasync`), and never part of a public type.
 */
export function syncLoneFlush(fd: number): void {
  fdatasyncSync(fd);
}
