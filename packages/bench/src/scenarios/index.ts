import type { Scenario } from '../scenario.js';
import { appendBatch, appendInFlightManyStreams, appendInFlightOneStream, appendSingle } from './append.js';
import { cliReads } from './cli.js';
import { compaction } from './compaction.js';
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
  coldOpen,
  openHistoryDepth,
  openManySessions,
  serviceRoundTrip,
  serviceConcurrentTranscript,
  serviceScaling,
  cliReads,
];
