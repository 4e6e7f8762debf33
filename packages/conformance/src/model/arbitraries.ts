import fc from 'fast-check';
import type { JsonValue, NewEvent } from '@sessionfold/core/kernel';
import type { ResolvedCapabilities } from '../capabilities.js';
import type { ModelSide, RealSide } from './sides.js';
import { STREAMS } from './sides.js';
import {
  AppendCommand,
  BlobsCommand,
  CatchUpCommand,
  CompactCommand,
  DeleteCommand,
  GetBlobCommand,
  PutBlobCommand,
  ReadAllCommand,
  ReadCommand,
  ReopenCommand,
  RetryCommand,
  RestoreCommand,
  StreamsCommand,
  type ExpectedChoice,
  type FeedStart,
  type RevisionChoice,
} from './commands.js';

// Most commands hit the first stream, so it grows long enough for compactions and retries to matter.
const stream = fc.oneof({ weight: 4, arbitrary: fc.constant(STREAMS[0]) }, { weight: 3, arbitrary: fc.constantFrom(...STREAMS.slice(1)) });

/** Small JSON values with the awkward cases: unicode, control characters, big and tiny doubles, nesting. */
const json: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.string({ unit: 'grapheme', maxLength: 6 }),
    fc.constantFrom('', '\n', '\u0000', '\u2028', '"\\', 'é🎉'),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'n', 'é', ''), tie('value'), { maxKeys: 3, noNullPrototype: true }),
  ),
})).value;

const eventIds = fc.constantFrom('e1', 'e2', 'e3', 'e4', 'e5', 'e6');

/** An event whose id, if any, comes from a small pool, so repeats (retries, clashes) happen often enough. */
const event = (idsInFour: number): fc.Arbitrary<NewEvent> =>
  fc
    .record({
      type: fc.oneof({ weight: 30, arbitrary: fc.constantFrom('Started', 'Noted', 'Closed') }, { weight: 1, arbitrary: fc.constant('$reserved') }),
      data: json,
      eventId: fc.oneof({ weight: 4 - idsInFour, arbitrary: fc.constant(undefined) }, { weight: idsInFour, arbitrary: eventIds }),
      // Mostly left out, as applications do; sometimes 1 given explicitly, sometimes a later version.
      schemaVersion: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) }),
    })
    .map(({ eventId, schemaVersion, ...rest }) => ({
      ...rest,
      ...(eventId === undefined ? {} : { eventId }),
      ...(schemaVersion === undefined ? {} : { schemaVersion }),
    }));

/** A batch: the first event carries an id half of the time, later ones a quarter of the time. */
const batch: fc.Arbitrary<NewEvent[]> = fc.tuple(event(2), fc.array(event(1), { maxLength: 3 })).map(([first, rest]) => [first, ...rest]);

const expected: fc.Arbitrary<ExpectedChoice> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<ExpectedChoice>('current') },
  { weight: 2, arbitrary: fc.constant<ExpectedChoice>('any') },
  { weight: 1, arbitrary: fc.constant<ExpectedChoice>('no_stream') },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 6 }) },
);

const feedStart: fc.Arbitrary<FeedStart> = fc.oneof(
  fc.constant<FeedStart>({ kind: 'start' }),
  fc.integer({ min: 0, max: 25 }).map((rank): FeedStart => ({ kind: 'rank', rank })),
  fc.integer({ min: 1, max: 25 }).map((rank): FeedStart => ({ kind: 'gap', rank })),
  { weight: 1, arbitrary: fc.constant<FeedStart>({ kind: 'zero' }) },
);

const revisionChoice: fc.Arbitrary<RevisionChoice> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 3 }).map((belowHead): RevisionChoice => ({ belowHead })) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 8 }).map((at): RevisionChoice => ({ at })) },
);

const blobName = fc.constantFrom('empty', 'small', 'large');

/** The commands of a model run; reopen is generated only when the store can reopen. */
export function commandArbitrary(caps: ResolvedCapabilities): fc.Arbitrary<Iterable<fc.AsyncCommand<ModelSide, RealSide>>> {
  const append = fc.tuple(stream, batch, expected).map(([s, events, e]) => new AppendCommand(s, events, e));
  const compact = fc
    .tuple(stream, revisionChoice, json, fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: stream }))
    .map(([s, revision, state, identity]) => new CompactCommand(s, revision, state, identity ?? s));
  const commands: Array<fc.Arbitrary<fc.AsyncCommand<ModelSide, RealSide>>> = [
    ...Array.from({ length: 8 }, () => append),
    fc.tuple(stream, fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined })).map(([s, from]) => new ReadCommand(s, from)),
    feedStart.map((from) => new ReadAllCommand(from)),
    fc.option(fc.constantFrom('', 's', 's_', 's-', 'S', 'x'), { nil: undefined }).map((prefix) => new StreamsCommand(prefix)),
    compact,
    compact,
    fc.tuple(stream, fc.integer({ min: 1, max: 8 }), json).map(([s, revision, state]) => new RestoreCommand(s, revision, state)),
    fc.tuple(stream, expected).map(([s, e]) => new DeleteCommand(s, e)),
    fc.tuple(stream, blobName).map(([s, blob]) => new PutBlobCommand(s, blob)),
    fc.oneof(blobName, fc.constant('never')).map((blob) => new GetBlobCommand(blob)),
    stream.map((s) => new BlobsCommand(s)),
    fc.nat({ max: 5 }).map((back) => new RetryCommand(back)),
    fc.nat({ max: 5 }).map((back) => new RetryCommand(back)),
    fc.constantFrom(0, 1).map((consumer) => new CatchUpCommand(consumer)),
  ];
  if (caps.reopen) commands.push(fc.constant(new ReopenCommand()));
  return fc.commands(commands, {
    maxCommands: caps.maxCommands,
    size: 'max',
    ...(caps.replay.replayPath === undefined ? {} : { replayPath: caps.replay.replayPath }),
  });
}
