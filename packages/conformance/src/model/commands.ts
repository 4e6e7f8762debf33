import { createHash } from 'node:crypto';
import type { AsyncCommand } from 'fast-check';
import { expect } from 'vitest';
import { InvalidInputError, type EventStore, type ExpectedRevision, type JsonValue, type NewEvent, type Snapshot } from '@sessionfold/core/kernel';
import { revisionMatches } from '@sessionfold/core/store-kit';
import { viewsFromReads } from '../feed-consumer.js';
import { listBlobs, listStreams, readFeed, readStream } from '../support.js';
import { errorShape, feedWithRanks, outcomeShape, recordShape, settle, type Outcome } from './outcome.js';
import { compareEverything, type ModelSide, type RealSide } from './sides.js';

/** An expected revision as a command states it: a literal, or whatever the stream is at when the command runs. */
export type ExpectedChoice = ExpectedRevision | 'current';

/** A command of the model run; `check` always holds, because invalid calls must fail alike on both sides. */
abstract class StoreCommand implements AsyncCommand<ModelSide, RealSide> {
  check(): boolean {
    return true;
  }
  abstract run(model: ModelSide, real: RealSide): Promise<void>;
  abstract toString(): string;

  /** Runs `call` on both stores and expects the same shaped outcome. */
  protected async same<T>(
    model: ModelSide,
    real: RealSide,
    call: (store: EventStore) => Promise<T>,
    normalize: (value: T, store: EventStore) => Promise<unknown> | unknown = (value) => value,
  ): Promise<{ model: Outcome<T>; real: Outcome<T> }> {
    const m = await settle(() => call(model.store));
    const r = await settle(() => call(real.store));
    const shape = async (outcome: Outcome<T>, store: EventStore) => (outcome.ok ? { ok: await normalize(outcome.value, store) } : outcomeShape(outcome));
    expect(await shape(r, real.store), String(this)).toEqual(await shape(m, model.store));
    return { model: m, real: r };
  }
}

const short = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
};
const showExpected = (expected: ExpectedChoice) => (typeof expected === 'number' ? String(expected) : expected);

async function resolveExpected(store: EventStore, stream: string, expected: ExpectedChoice): Promise<ExpectedRevision> {
  if (expected !== 'current') return expected;
  const { revision } = await store.read(stream);
  return revision === 0 ? 'no_stream' : revision;
}

const appendResultShape = async (value: { revision: number; position: number }, store: EventStore) => ({
  revision: value.revision,
  rank: (await feedWithRanks(store)).rank(value.position),
});

/** append(stream, events, expectedRevision). */
export class AppendCommand extends StoreCommand {
  constructor(
    readonly stream: string,
    readonly events: readonly NewEvent[],
    readonly expected: ExpectedChoice,
  ) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    const expectedRevision = await resolveExpected(model.store, this.stream, this.expected);
    await appendOnBoth(model, real, this.stream, this.events, expectedRevision, String(this));
  }

  toString(): string {
    const events = this.events.map((e) => `${e.type}${e.eventId === undefined ? '' : `#${e.eventId}`} ${short(e.data)}`);
    return `append(${this.stream}, [${events.join(', ')}], expected=${showExpected(this.expected)})`;
  }
}

/** Sends an earlier append again exactly as it was sent (stale expected revision included), like a client retrying. */
export class RetryCommand extends StoreCommand {
  constructor(readonly back: number) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    const earlier = model.sent[model.sent.length - 1 - (this.back % Math.max(model.sent.length, 1))];
    if (!earlier) return;
    const label = `${this} = append(${earlier.stream}, ${short(earlier.events.map((e) => e.eventId ?? e.type))}, expected=${earlier.expectedRevision})`;
    await appendOnBoth(model, real, earlier.stream, earlier.events, earlier.expectedRevision, label);
  }

  toString(): string {
    return this.back === 0 ? 'retry(the last append)' : `retry(the append ${this.back} before the last)`;
  }
}

/** Appends on both sides and compares; records the append so it can be retried. */
async function appendOnBoth(
  model: ModelSide,
  real: RealSide,
  stream: string,
  events: readonly NewEvent[],
  expectedRevision: ExpectedRevision,
  label: string,
): Promise<void> {
  model.sent.push({ stream, events, expectedRevision });
  const before = await readStream(model.store, stream);
  const known = new Set(before.events.flatMap((e) => (e.eventId === undefined ? [] : [e.eventId])));
  const firstKnown = events[0]?.eventId !== undefined && known.has(events[0].eventId);
  const laterKnown = events.some((e, i) => i > 0 && e.eventId !== undefined && known.has(e.eventId));
  const m = await settle(() => model.store.append(stream, events, { expectedRevision }));
  const r = await settle(() => real.store.append(stream, events, { expectedRevision }));
  // The port does not order the check of a known later eventId against the revision check: either error will do.
  const ids = events.flatMap((e) => (e.eventId === undefined ? [] : [e.eventId]));
  const wellFormed = new Set(ids).size === ids.length && events.every((e) => !e.type.startsWith('$'));
  const eitherError = wellFormed && !firstKnown && laterKnown && !revisionMatches(expectedRevision, before.revision);
  if (eitherError && !m.ok && !r.ok) {
    const conflict = { error: 'ConcurrencyError', code: 'concurrency_conflict', stream, expected: expectedRevision, actual: before.revision };
    const invalid = { error: 'InvalidInputError', code: 'invalid_input' };
    expect([conflict, invalid], label).toContainEqual(errorShape(r.error));
    expect(m.error).toBeInstanceOf(InvalidInputError);
    return;
  }
  const shape = async (outcome: typeof m, store: EventStore) => (outcome.ok ? { ok: await appendResultShape(outcome.value, store) } : outcomeShape(outcome));
  expect(await shape(r, real.store), label).toEqual(await shape(m, model.store));
}

/** read(stream, { fromRevision }). */
export class ReadCommand extends StoreCommand {
  constructor(
    readonly stream: string,
    readonly fromRevision: number | undefined,
  ) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    await this.same(
      model,
      real,
      (store) => readStream(store, this.stream, this.fromRevision),
      async (read, store) => {
        const { rank } = await feedWithRanks(store);
        return {
          revision: read.revision,
          snapshot: read.snapshot,
          events: read.events.map((e) => ({ ...recordShape(e), rank: rank(e.position) })),
        };
      },
    );
  }

  toString(): string {
    return `read(${this.stream}${this.fromRevision === undefined ? '' : `, from=${this.fromRevision}`})`;
  }
}

/** Where a readAll starts, relative to the feed as it is when the command runs. */
export type FeedStart = { kind: 'start' } | { kind: 'rank'; rank: number } | { kind: 'gap'; rank: number } | { kind: 'zero' };

/** readAll({ fromPosition }) with the position chosen by rank, so stores with gaps in their positions compare. */
export class ReadAllCommand extends StoreCommand {
  constructor(readonly from: FeedStart) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    const position = async (store: EventStore): Promise<number | undefined> => {
      const feed = await readFeed(store);
      const end = (feed.at(-1)?.position ?? 0) + 1;
      switch (this.from.kind) {
        case 'start':
          return undefined;
        case 'zero':
          return 0;
        case 'rank':
          return feed[this.from.rank]?.position ?? end;
        case 'gap': {
          const previous = feed[this.from.rank - 1];
          if (this.from.rank === 0 || !previous) return feed[this.from.rank]?.position ?? end;
          return previous.position + 1;
        }
      }
    };
    const [mFrom, rFrom] = [await position(model.store), await position(real.store)];
    const m = await settle(() => readFeed(model.store, mFrom));
    const r = await settle(() => readFeed(real.store, rFrom));
    expect(
      outcomeShape(r, (feed) => feed.map(recordShape)),
      `${this} (real from ${rFrom})`,
    ).toEqual(outcomeShape(m, (feed) => feed.map(recordShape)));
    if (r.ok) {
      for (let i = 1; i < r.value.length; i++) expect(r.value[i]!.position).toBeGreaterThan(r.value[i - 1]!.position);
    }
  }

  toString(): string {
    switch (this.from.kind) {
      case 'start':
        return 'readAll()';
      case 'zero':
        return 'readAll(from=0)';
      case 'rank':
        return `readAll(from=record #${this.from.rank})`;
      case 'gap':
        return `readAll(from=just after record #${this.from.rank - 1})`;
    }
  }
}

/** streams({ prefix }). */
export class StreamsCommand extends StoreCommand {
  constructor(readonly prefix: string | undefined) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    await this.same(model, real, (store) => listStreams(store, this.prefix));
  }

  toString(): string {
    return this.prefix === undefined ? 'streams()' : `streams(prefix=${JSON.stringify(this.prefix)})`;
  }
}

/** A snapshot revision as a command states it: a literal, or some way below the head when the command runs. */
export type RevisionChoice = { at: number } | { belowHead: number };

/** compact(stream, snapshot). */
export class CompactCommand extends StoreCommand {
  constructor(
    readonly stream: string,
    readonly revision: RevisionChoice,
    readonly state: JsonValue,
    readonly identityStream: string,
  ) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    const revision = 'at' in this.revision ? this.revision.at : (await model.store.read(this.stream)).revision - this.revision.belowHead;
    const snapshot: Snapshot = { revision, state: this.state, identity: { stream: this.identityStream, schemaVersion: 1 } };
    await this.same(
      model,
      real,
      (store) => store.compact(this.stream, snapshot),
      () => null,
    );
  }

  toString(): string {
    const at = 'at' in this.revision ? String(this.revision.at) : this.revision.belowHead === 0 ? 'head' : `head-${this.revision.belowHead}`;
    const identity = this.identityStream === this.stream ? '' : `, identity=${this.identityStream}`;
    return `compact(${this.stream}, at=${at}, state=${short(this.state)}${identity})`;
  }
}

/** restoreStream(stream, snapshot). */
export class RestoreCommand extends StoreCommand {
  constructor(
    readonly stream: string,
    readonly revision: number,
    readonly state: JsonValue,
  ) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    const snapshot: Snapshot = { revision: this.revision, state: this.state, identity: { stream: this.stream, schemaVersion: 2 } };
    await this.same(model, real, (store) => store.restoreStream(this.stream, snapshot), appendResultShape);
  }

  toString(): string {
    return `restoreStream(${this.stream}, at=${this.revision}, state=${short(this.state)})`;
  }
}

/** deleteStream(stream, expectedRevision). */
export class DeleteCommand extends StoreCommand {
  constructor(
    readonly stream: string,
    readonly expected: ExpectedChoice,
  ) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    const expectedRevision = await resolveExpected(model.store, this.stream, this.expected);
    await this.same(
      model,
      real,
      (store) => store.deleteStream(this.stream, { expectedRevision }),
      () => null,
    );
  }

  toString(): string {
    return `deleteStream(${this.stream}, expected=${showExpected(this.expected)})`;
  }
}

/** Named byte strings, so a blob can be shared by streams and a counterexample stays short. */
export const BLOBS: Readonly<Record<string, Uint8Array>> = {
  empty: new Uint8Array(0),
  small: new Uint8Array([1, 2, 3]),
  large: Uint8Array.from({ length: 5000 }, (_, i) => (i * 31) % 256),
  never: new TextEncoder().encode('never stored'),
};

/** putBlob(stream, bytes). */
export class PutBlobCommand extends StoreCommand {
  constructor(
    readonly stream: string,
    readonly blob: string,
  ) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    await this.same(model, real, (store) => store.putBlob(this.stream, BLOBS[this.blob] as Uint8Array));
  }

  toString(): string {
    return `putBlob(${this.stream}, ${this.blob})`;
  }
}

/** getBlob(sha256 of a named byte string). */
export class GetBlobCommand extends StoreCommand {
  constructor(readonly blob: string) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    const sha = createHash('sha256')
      .update(BLOBS[this.blob] as Uint8Array)
      .digest('hex');
    await this.same(
      model,
      real,
      (store) => store.getBlob(sha),
      (bytes) => (bytes === undefined ? 'absent' : Array.from(bytes)),
    );
  }

  toString(): string {
    return `getBlob(${this.blob})`;
  }
}

/** blobs(stream). */
export class BlobsCommand extends StoreCommand {
  constructor(readonly stream: string) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    await this.same(model, real, (store) => listBlobs(store, this.stream));
  }

  toString(): string {
    return `blobs(${this.stream})`;
  }
}

/** One change-feed consumer catches up; its views must match read() on the real store and on the model. */
export class CatchUpCommand extends StoreCommand {
  constructor(readonly consumer: number) {
    super();
  }

  async run(model: ModelSide, real: RealSide): Promise<void> {
    const consumer = real.consumers[this.consumer];
    if (!consumer) throw new Error(`no consumer ${this.consumer}`);
    await consumer.catchUp(real.store);
    const truth = await viewsFromReads(real.store);
    expect(consumer.views(), `${this}: views folded from readAll vs read()`).toEqual(truth);
    expect(truth, `${this}: read() of every stream vs the model`).toEqual(await viewsFromReads(model.store));
  }

  toString(): string {
    return `catchUp(consumer ${this.consumer})`;
  }
}

/** Closes the real store and opens the same storage again; everything must still compare equal. */
export class ReopenCommand extends StoreCommand {
  async run(model: ModelSide, real: RealSide): Promise<void> {
    if (!real.reopen) throw new Error('reopen without the reopen capability');
    real.store = await real.reopen(real.store);
    await compareEverything(model, real, 'after reopen');
  }

  toString(): string {
    return 'reopen()';
  }
}
