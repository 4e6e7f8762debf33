import { describe } from 'vitest';
import type { EventStore } from '@sessionfold/core/kernel';
import { describeModelRuns } from './model/model-run.js';
import { resolveCapabilities, type EventStoreCapabilities } from './capabilities.js';
import { describeAppendRules } from './rules/append-rules.js';
import { describeBlobRules } from './rules/blob-rules.js';
import { describeCheckpointRules } from './rules/checkpoint-rules.js';
import { describeConcurrencyRules } from './rules/concurrency-rules.js';
import { describeLinearizabilityRules } from './rules/linearizability-rules.js';
import { describeFeedRules } from './rules/feed-rules.js';
import { describeFollowRules } from './rules/follow-rules.js';
import { describeIdempotencyRules } from './rules/idempotency-rules.js';
import { describeInputReadingRules } from './rules/input-reading-rules.js';
import { describeInputRules } from './rules/input-rules.js';
import { describeIsolationRules } from './rules/isolation-rules.js';
import { describeLifecycleRules } from './rules/lifecycle-rules.js';
import { describeObserverRules } from './rules/observer-rules.js';
import { describeReadRules } from './rules/read-rules.js';
import { describeSchemaVersionRules } from './rules/schema-version-rules.js';
import { describeStoredReadRules } from './rules/stored-rules.js';
import { describeStreamRules } from './rules/stream-rules.js';
import { describeVerifyRules } from './rules/verify-rules.js';
import { describeStatusRules } from './rules/status-rules.js';
import { suiteContext } from './support.js';

/**
 * Registers the whole conformance suite for a store: one example test per rule of the `EventStore` port, then
 * model-based runs against the in-memory reference store. `makeStore` must return a new, empty store each call.
 */
export function describeEventStoreConformance(
  name: string,
  makeStore: () => EventStore | Promise<EventStore>,
  capabilities: EventStoreCapabilities = {},
): void {
  const ctx = suiteContext(resolveCapabilities(capabilities), makeStore);
  describe(`${name}: EventStore conformance`, () => {
    describeAppendRules(ctx);
    describeIdempotencyRules(ctx);
    describeReadRules(ctx);
    describeFeedRules(ctx);
    describeStoredReadRules(ctx);
    describeSchemaVersionRules(ctx);
    describeStreamRules(ctx);
    describeBlobRules(ctx);
    describeInputRules(ctx);
    describeInputReadingRules(ctx);
    describeIsolationRules(ctx);
    describeConcurrencyRules(ctx);
    describeLinearizabilityRules(ctx);
    describeLifecycleRules(ctx);
    describeVerifyRules(ctx);
    describeFollowRules(ctx);
    describeCheckpointRules(ctx);
    describeStatusRules(ctx);
    describeObserverRules(ctx);
    describeModelRuns(ctx);
  });
}
