export { describeEventStoreConformance } from './describe-conformance.js';
export {
  DEFAULT_CAPABILITIES,
  resolveCapabilities,
  type EventStoreCapabilities,
  type ResolvedCapabilities,
} from './capabilities.js';
export { FeedConsumer, viewsFromReads, type StreamView } from './feed-consumer.js';
export { storeLifecycle, type StoreLifecycle, type StoreUnderTest } from './store-under-test.js';
export { propertyRuns, propertyTestEnv, REPLAY_PATH_VARIABLE, type EnvironmentVariables, type PropertyTestEnv } from './property-env.js';
export { streamReadsAgreeWithFeed } from './stream-pages.js';
