export { describeEventStoreConformance } from './describe-conformance.js';
export {
  DEFAULT_CAPABILITIES,
  resolveCapabilities,
  type EventStoreCapabilities,
  type ResolvedCapabilities,
} from './capabilities.js';
export { FeedConsumer, viewsFromReads, type StreamView } from './feed-consumer.js';
