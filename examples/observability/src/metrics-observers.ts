import type { SessionHistoryObserver, StoreObserver } from '@sessionfold/core';

/** Attributes of one measurement, as OpenTelemetry takes them. */
export type Attributes = Record<string, string | number | boolean>;

/**
 * The part of an OpenTelemetry `Meter` these observers use: `metrics.getMeter('sessionfold')` from
 * `@opentelemetry/api` fits as it is, and so does the small in-memory meter in `memory-meter.ts`.
 */
export interface MeterLike {
  createCounter(name: string, options?: { description?: string; unit?: string }): { add(value: number, attributes?: Attributes): void };
  createHistogram(name: string, options?: { description?: string; unit?: string }): { record(value: number, attributes?: Attributes): void };
}

/**
 * Observers that turn a store's and the service's hooks into counters and histograms. Streams are not used as
 * attributes (one series per stream would grow without bound); the stream's kind (`session`, `catalog`, …) is.
 */
export function metricsObservers(meter: MeterLike): { store: StoreObserver; service: SessionHistoryObserver } {
  const events = meter.createCounter('sessionfold.store.events', { description: 'Events made durable', unit: '{event}' });
  const bytes = meter.createCounter('sessionfold.store.bytes', { description: 'Serialized event bytes made durable', unit: 'By' });
  const appendDuration = meter.createHistogram('sessionfold.store.append.duration', { description: 'Append call to acknowledgement', unit: 'ms' });
  const syncDuration = meter.createHistogram('sessionfold.store.sync.duration', { description: 'One group commit sync', unit: 'ms' });
  const batchSize = meter.createHistogram('sessionfold.store.sync.appends', { description: 'Appends made durable by one sync', unit: '{append}' });
  const compactions = meter.createCounter('sessionfold.compactions', { description: 'Compactions, by outcome', unit: '{compaction}' });
  const dropped = meter.createCounter('sessionfold.compaction.dropped_events', { description: 'Events replaced by snapshots', unit: '{event}' });
  const corruptions = meter.createCounter('sessionfold.store.corruptions', { description: 'Damage found by reads', unit: '{problem}' });
  const conflicts = meter.createCounter('sessionfold.service.conflicts', { description: 'Writes decided again after another writer', unit: '{retry}' });
  const calls = meter.createHistogram('sessionfold.service.calls_per_append', { description: 'Calls decided together in one append', unit: '{call}' });
  const checkpoints = meter.createCounter('sessionfold.service.checkpoints', { description: 'Projection checkpoints, by outcome', unit: '{checkpoint}' });
  const lag = meter.createHistogram('sessionfold.service.projection.changes', { description: 'Feed changes applied per catch-up', unit: '{change}' });

  return {
    store: {
      appendCommitted: (append) => {
        const attributes = { stream_kind: streamKind(append.stream) };
        events.add(append.events, attributes);
        bytes.add(append.bytes, attributes);
        appendDuration.record(append.durationMs, attributes);
      },
      flushed: (flush) => {
        syncDuration.record(flush.syncMs);
        batchSize.record(flush.appends);
      },
      compacted: (compaction) => dropped.add(compaction.droppedEvents, { stream_kind: streamKind(compaction.stream) }),
      corruptionFound: () => corruptions.add(1),
    },
    service: {
      appendCommitted: (append) => calls.record(append.calls, { stream_kind: streamKind(append.stream) }),
      compaction: (compaction) => compactions.add(1, { outcome: compaction.error === undefined ? 'done' : 'failed' }),
      conflictRetried: () => conflicts.add(1),
      projectionCaughtUp: (catchUp) => lag.record(catchUp.changes, { source: catchUp.source }),
      checkpointSaved: (save) => checkpoints.add(1, { outcome: save.error === undefined ? 'saved' : 'failed' }),
      checkpointIgnored: (ignored) => checkpoints.add(1, { outcome: `ignored_${ignored.reason}` }),
    },
  };
}

/** `session-…` → `session`: the part of a stream id before its first dash, a bounded set. */
export function streamKind(stream: string): string {
  const dash = stream.indexOf('-');
  return dash === -1 ? stream : stream.slice(0, dash);
}
