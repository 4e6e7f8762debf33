import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { expect, onTestFinished, type TestContext } from 'vitest';
import {
  ConcurrencyError,
  InvalidInputError,
  StoreClosedError,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  type Snapshot,
  type StreamId,
} from '@sessionfold/core/kernel';
import type { ResolvedCapabilities } from './capabilities.js';

/** A store opened for one test; closed when the test ends unless the test closed it itself. */
export interface Harness {
  store: EventStore;
  /** Closes and opens the same storage again (requires the reopen capability). */
  reopen(): Promise<EventStore>;
  close(): Promise<void>;
}

/** What every area of the suite receives: the capabilities and a way to open a fresh store. */
export interface SuiteContext {
  readonly caps: ResolvedCapabilities;
  readonly makeStore: () => EventStore | Promise<EventStore>;
  fresh(): Promise<Harness>;
}

/** Builds the context; `fresh()` must be called inside a test. */
export function suiteContext(caps: ResolvedCapabilities, makeStore: () => EventStore | Promise<EventStore>): SuiteContext {
  return {
    caps,
    makeStore,
    async fresh() {
      let open = true;
      const harness: Harness = {
        store: await makeStore(),
        async reopen() {
          if (!caps.reopen) throw new Error('the store has no reopen capability');
          harness.store = await caps.reopen(harness.store);
          return harness.store;
        },
        async close() {
          if (!open) return;
          open = false;
          await harness.store.close();
        },
      };
      onTestFinished(() => harness.close());
      return harness;
    },
  };
}

/** A stream id unique to this call, e.g. `order-3f9a1c20`. */
export function streamId(label = 's'): StreamId {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/** Everything `read` returns, with the events collected. */
export interface CollectedRead {
  revision: number;
  snapshot?: Snapshot;
  events: RecordedEvent[];
}

/** Reads a stream and collects its events; synchronous throws become rejections. */
export async function readStream(store: EventStore, stream: StreamId, fromRevision?: number): Promise<CollectedRead> {
  const read = await store.read(stream, fromRevision === undefined ? undefined : { fromRevision });
  const events: RecordedEvent[] = [];
  for await (const event of read.events) events.push(event);
  return { revision: read.revision, ...(read.snapshot === undefined ? {} : { snapshot: read.snapshot }), events };
}

/** Collects `readAll`; synchronous throws become rejections. */
export async function readFeed(store: EventStore, fromPosition?: number): Promise<RecordedEvent[]> {
  const records: RecordedEvent[] = [];
  for await (const record of store.readAll(fromPosition === undefined ? undefined : { fromPosition })) records.push(record);
  return records;
}

/** Collects `streams`. */
export async function listStreams(store: EventStore, prefix?: string): Promise<Array<{ stream: StreamId; revision: number }>> {
  const listed: Array<{ stream: StreamId; revision: number }> = [];
  for await (const entry of store.streams(prefix === undefined ? undefined : { prefix })) listed.push(entry);
  return listed;
}

/** Collects `blobs`. */
export async function listBlobs(store: EventStore, stream: StreamId): Promise<string[]> {
  const listed: string[] = [];
  for await (const sha of store.blobs(stream)) listed.push(sha);
  return listed;
}

/** Appends events of the given types (data `{ n: index }`) and returns the result. */
export function appendTypes(store: EventStore, stream: StreamId, types: string[], expectedRevision: ExpectedRevision = 'any') {
  return store.append(
    stream,
    types.map((type, n) => ({ type, data: { n } })),
    { expectedRevision },
  );
}

/** A snapshot of `stream` at `revision` with a recognisable state. */
export function snapshotOf(stream: StreamId, revision: number, state: Snapshot['state'] = { upTo: revision }): Snapshot {
  return { revision, state, identity: { stream, schemaVersion: 1 } };
}

/** The stored shape of an event, without position and time. */
export function stored(event: RecordedEvent): Omit<RecordedEvent, 'position' | 'recordedAt'> {
  const { position: _position, recordedAt: _recordedAt, ...rest } = event;
  return rest;
}

/** What an appended `NewEvent` looks like when read back (without position and time). */
export function expectedStored(stream: StreamId, event: NewEvent, revision: number): Omit<RecordedEvent, 'position' | 'recordedAt'> {
  return {
    streamId: stream,
    type: event.type,
    data: event.data,
    ...(event.eventId === undefined ? {} : { eventId: event.eventId }),
    schemaVersion: event.schemaVersion ?? 1,
    revision,
  };
}

type ErrorClass<E> = abstract new (...args: never[]) => E;

/** Runs `action`, expects it to fail with `type` and `code`, and returns the error. */
export async function expectFailure<E extends Error>(action: () => unknown, type: ErrorClass<E>, code: string): Promise<E> {
  let value: unknown;
  try {
    value = await action();
  } catch (error) {
    expect(error, `expected ${type.name}, got ${inspect(error)}`).toBeInstanceOf(type);
    expect((error as { code?: unknown }).code).toBe(code);
    return error as E;
  }
  return expect.fail(`expected ${type.name} (${code}), but it resolved with ${inspect(value, { depth: 4 })}`);
}

/** Expects `InvalidInputError` with code `invalid_input`. */
export function expectInvalid(action: () => unknown): Promise<InvalidInputError> {
  return expectFailure(action, InvalidInputError, 'invalid_input');
}

/** Expects `ConcurrencyError` with code `concurrency_conflict` and the given stream, expected and actual. */
export async function expectConflict(
  action: () => unknown,
  fields: { stream: StreamId; expected: ExpectedRevision; actual: number },
): Promise<ConcurrencyError> {
  const error = await expectFailure(action, ConcurrencyError, 'concurrency_conflict');
  expect({ stream: error.stream, expected: error.expected, actual: error.actual }).toEqual(fields);
  return error;
}

/** Expects `StoreClosedError` with code `store_closed`. */
export function expectClosed(action: () => unknown): Promise<StoreClosedError> {
  return expectFailure(action, StoreClosedError, 'store_closed');
}

/** Everything a store shows about some streams, to compare before and after an operation that must change nothing. */
export async function observe(store: EventStore, streams: StreamId[]): Promise<unknown> {
  const reads = [];
  for (const stream of streams) reads.push({ stream, read: await readStream(store, stream), blobs: await listBlobs(store, stream) });
  return { reads, feed: await readFeed(store), listed: await listStreams(store) };
}

/** Skips the running test when the store lacks a capability, printing why: a silent skip proves nothing. */
export function skipWithout(t: TestContext, lacking: boolean, reason: string): void {
  if (!lacking) return;
  console.info(`skipped "${t.task.name}": ${reason}`);
  t.skip(reason);
}

/** The port's optional members: each has rules that run on every store that has it. */
export type OptionalMember = 'verify' | 'follow' | 'readStored' | 'readAllStored' | 'checkpoints' | 'status';

/**
 * Skips the running test, printing why, when `store` lacks the optional member `member`; past this call the store
 * is typed as having it. A rule of an optional member thus runs on every store that has the member.
 */
export function skipWithoutMember<M extends OptionalMember>(
  t: TestContext,
  store: EventStore,
  member: M,
): asserts store is EventStore & Required<Pick<EventStore, M>> {
  skipWithout(t, store[member] === undefined, `the store has no ${member} (an optional member of the port)`);
}
