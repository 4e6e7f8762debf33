/** How much work each scenario does; `quick` is for development, `full` for published figures. */
export interface Volumes {
  /** Durable appends of one event, one after another. */
  singleAppends: number;
  /** Events appended with 64 calls in flight (per layout: one stream, 64 streams). */
  concurrentEvents: number;
  /** Calls in flight in the concurrent scenarios. */
  inFlight: number;
  /** Appends of `batchSize` events each. */
  batchCalls: number;
  batchSize: number;
  /** Events in the one stream that is replayed. */
  replayEvents: number;
  /** Reads of each read scenario, alternating with the raw read; the median counts. */
  readRepeats: number;
  /** Events read back by `readAll`, spread over `readAllStreams` streams. */
  readAllEvents: number;
  readAllStreams: number;
  /** Service round trips (start → enqueue → claim → complete → checkpoint). */
  roundTrips: number;
  /** Rounds of 100 `appendTranscript` calls on one session, at once and one after another. */
  transcriptRounds: number;
  /** Events in the stream that is compacted. */
  compactionEvents: number;
  /** Sessions in the store opened cold. */
  coldOpenSessions: number;
  /** Sessions of the two stores `open-history-depth` compares, and the events each session of the deep one holds. */
  depthSessions: number;
  depthEvents: number;
  /** Sessions in the store `open-many` opens. */
  manySessions: number;
  /** Timed opens of each store in the open scenarios (alternating where two are compared); the median counts. */
  openRepeats: number;
  /** Session counts compared by the scaling scenario, and calls timed at each. */
  scalingSmall: number;
  scalingLarge: number;
  scalingCalls: number;
  /** Sealed 64 MiB segments of the cleaning scenario's log (the store's segment size is fixed: at least 2). */
  cleaningSegments: number;
  /** Streams of the store `index-heap` reopens, and the events each gets (one per round, interleaved). */
  heapStreams: number;
  heapEvents: number;
  /** Started sessions the inspector's sessions list pages over (`inspect-sessions`). */
  inspectSessions: number;
  /** Events of the one session whose timeline the inspector pages (`inspect-timeline`). */
  inspectTimelineEvents: number;
  /** Events per append while filling stores for read scenarios (Emmett's SQLite store refuses much over 1,000: too many SQL variables). */
  fillBatch: number;
}

/** Volumes of a `--quick` run: the whole run takes well under a minute. */
export const QUICK: Volumes = {
  singleAppends: 300,
  concurrentEvents: 64 * 12,
  inFlight: 64,
  batchCalls: 30,
  batchSize: 100,
  replayEvents: 50_000,
  readRepeats: 3,
  readAllEvents: 50_000,
  readAllStreams: 1_000,
  roundTrips: 100,
  transcriptRounds: 6,
  compactionEvents: 50_000,
  coldOpenSessions: 1_000,
  depthSessions: 1_000,
  depthEvents: 50,
  manySessions: 10_000,
  openRepeats: 5,
  scalingSmall: 10,
  scalingLarge: 1_000,
  scalingCalls: 50,
  cleaningSegments: 2,
  heapStreams: 10_000,
  heapEvents: 50,
  inspectSessions: 10_000,
  inspectTimelineEvents: 50_000,
  fillBatch: 1_000,
};

/** Volumes of the full run. */
export const FULL: Volumes = {
  singleAppends: 3_000,
  concurrentEvents: 64 * 100,
  inFlight: 64,
  batchCalls: 300,
  batchSize: 100,
  replayEvents: 1_000_000,
  readRepeats: 3,
  readAllEvents: 1_000_000,
  readAllStreams: 1_000,
  roundTrips: 1_000,
  transcriptRounds: 20,
  compactionEvents: 100_000,
  coldOpenSessions: 10_000,
  depthSessions: 10_000,
  depthEvents: 50,
  manySessions: 100_000,
  openRepeats: 5,
  scalingSmall: 10,
  scalingLarge: 10_000,
  scalingCalls: 300,
  cleaningSegments: 6,
  heapStreams: 100_000,
  heapEvents: 50,
  inspectSessions: 100_000,
  inspectTimelineEvents: 1_000_000,
  fillBatch: 1_000,
};

/** Tiny volumes for unit tests of the harness: exercises every code path in a second or two. */
export const TINY: Volumes = {
  singleAppends: 5,
  concurrentEvents: 16,
  inFlight: 8,
  batchCalls: 2,
  batchSize: 10,
  replayEvents: 200,
  readRepeats: 2,
  readAllEvents: 200,
  readAllStreams: 10,
  roundTrips: 3,
  transcriptRounds: 2,
  compactionEvents: 200,
  coldOpenSessions: 5,
  depthSessions: 3,
  depthEvents: 3,
  manySessions: 5,
  openRepeats: 1,
  scalingSmall: 2,
  scalingLarge: 5,
  scalingCalls: 3,
  cleaningSegments: 2,
  heapStreams: 5,
  heapEvents: 3,
  inspectSessions: 5,
  inspectTimelineEvents: 300,
  fillBatch: 50,
};
