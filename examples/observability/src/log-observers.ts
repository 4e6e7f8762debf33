import type { SessionHistoryObserver, StoreObserver } from '@sessionfold/core';

/** Where log lines go: `console` fits, and so does any logger with these two methods. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

/** Observers that write one line per event worth a line: slow syncs, compactions, conflicts, damage, checkpoints. */
export function logObservers(logger: Logger, slowSyncMs = 50): { store: StoreObserver; service: SessionHistoryObserver } {
  return {
    store: {
      flushed: ({ appends, events, bytes, syncMs }) => {
        if (syncMs >= slowSyncMs) logger.warn(`sessionfold: slow sync ${syncMs.toFixed(1)} ms for ${appends} appends (${events} events, ${bytes} bytes)`);
      },
      compacted: ({ stream, revision, droppedEvents }) =>
        logger.info(`sessionfold: compacted ${stream} at revision ${revision}, ${droppedEvents} events dropped`),
      corruptionFound: ({ error }) => logger.warn(`sessionfold: damage found: ${error.message}`),
    },
    service: {
      conflictRetried: ({ stream, attempt }) => logger.info(`sessionfold: ${stream} changed under this write, attempt ${attempt + 1}`),
      compaction: (compaction) => {
        if (compaction.error !== undefined) logger.warn(`sessionfold: background compaction of ${compaction.stream} failed: ${String(compaction.error)}`);
      },
      checkpointLoaded: ({ position, sessions, durationMs }) =>
        logger.info(`sessionfold: opened from the checkpoint at position ${position} (${sessions} sessions) in ${durationMs.toFixed(0)} ms`),
      // A missing checkpoint is the first open of a store; anything else is worth a warning: the open read the whole feed.
      checkpointIgnored: ({ reason, message }) =>
        (reason === 'missing' ? logger.info : logger.warn)(`sessionfold: checkpoint not used (${reason}): ${message}`),
      checkpointSaved: ({ error }) => {
        if (error !== undefined) logger.warn(`sessionfold: checkpoint save failed: ${error.message}`);
      },
      followFailed: ({ error }) => logger.warn(`sessionfold: following the store failed, again in a second: ${error.message}`),
    },
  };
}
