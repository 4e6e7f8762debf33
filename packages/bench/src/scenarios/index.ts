import type { Scenario } from '../scenario.js';
import { appendBatch, appendInFlightManyStreams, appendInFlightOneStream, appendSingle } from './append.js';
import { cleaning } from './cleaning.js';
import { cliReads } from './cli.js';
import { compaction } from './compaction.js';
import { indexHeap } from './index-heap.js';
import { inspectSessions, inspectTimeline } from './inspect.js';
import { openHistoryDepth, openManySessions } from './open.js';
import { readAllStreams, replayStream } from './replay.js';
import { coldOpen, serviceConcurrentTranscript, serviceRoundTrip, serviceScaling } from './service.js';

/** Every scenario, in table order. Add a scenario here and every store runs it. */
export const SCENARIOS: readonly Scenario[] = [
  appendSingle,
  appendInFlightOneStream,
  appendInFlightManyStreams,
  appendBatch,
  replayStream,
  readAllStreams,
  compaction,
  cleaning,
  coldOpen,
  openHistoryDepth,
  openManySessions,
  indexHeap,
  serviceRoundTrip,
  serviceConcurrentTranscript,
  serviceScaling,
  cliReads,
  inspectSessions,
  inspectTimeline,
];
