import type { Command } from 'commander';
import { copyStore, foldStream, InvalidInputError, type EventStore, type RecordedEvent, type StreamRead } from '@sessionfold/core/kernel';
import { contextOf, withStoreAt } from '../context.js';
import { refused } from '../exit-codes.js';
import { examples } from '../help.js';
import { interruptible, turnPerStream } from '../interruption.js';
import { parseArg } from '../parse.js';
import { progress } from '../progress.js';
import { canonicalJson, reducerOf } from '../reducers.js';
import { describeLocation, parseStoreUrl } from '../store-url.js';
import { z } from 'zod';

/**
 * `copy <from> <to>`: every stream, snapshot and blob (copyStore), then a check that both stores fold every
 * stream the service writes to identical state. Running it again copies only what is new; a destination
 * that diverged is refused (exit 1).
 */
export function registerCopy(program: Command): void {
  program
    .command('copy')
    .description('copy every stream, snapshot and blob to another store, then check both fold every session to identical records')
    .argument('<from>', 'the source store URL (opened read-only)')
    .argument('<to>', 'the destination store URL (created if missing)')
    .addHelpText(
      'after',
      examples('sessionfold copy file:./data sqlite:./sessions.db', 'sessionfold copy sqlite:./sessions.db file:./backup --json') +
        '\n\nRunning it again copies only what is new, or nothing; a destination stream that diverged from the source is refused (exit 1).',
    )
    .action(async (rawFrom: unknown, rawTo: unknown, _options: unknown, command: Command) => {
      const context = contextOf(command);
      const from = parseStoreUrl(parseArg(z.string(), rawFrom, '<from>'));
      const to = parseStoreUrl(parseArg(z.string(), rawTo, '<to>'));
      if (describeLocation(from) === describeLocation(to)) throw refused('the source and the destination are the same store');
      const { out } = context;
      await interruptible((interruption) =>
        withStoreAt(from, 'read', async (source) =>
          withStoreAt(to, 'create', async (destination) => {
            let total = 0;
            for await (const _ of source.store.streams()) total++;
            const bar = progress(out, 'copy', total);
            let report;
            try {
              let copied = 0;
              report = await copyStore(turnPerStream(source.store), destination.store, {
                // Called after each stream: stopping here leaves every stream in the destination whole.
                onProgress: () => {
                  copied++;
                  bar.tick();
                  if (copied < total)
                    interruption.check(
                      `${copied} of ${total} stream(s); each stream copied is whole`,
                      'Try: sessionfold copy again: it copies only what is new',
                    );
                },
              });
            } catch (error) {
              if (error instanceof InvalidInputError && error.field === 'to')
                throw refused(
                  `the destination diverged: ${await describeDivergence(source.store, destination.store, error.message)}`,
                  'Try: copy into an empty store',
                );
              throw error;
            } finally {
              bar.stop();
            }
            const mismatches = await compareFolds(source.store, destination.store);
            const summary = { from: source.where, to: destination.where, ...report, identical: mismatches.length === 0, mismatches };
            if (out.json) await out.document(summary);
            else {
              await out.text(
                `copied ${report.streams} stream(s): ${report.events} event(s), ${report.blobs} blob(s) new; ${report.unchanged} already up to date`,
              );
              for (const stream of mismatches) await out.text(`differs after the copy: ${stream}`);
              await out.text(mismatches.length === 0 ? 'both stores fold every stream to identical state' : `${mismatches.length} stream(s) fold differently`);
            }
            if (mismatches.length > 0) throw refused(`${mismatches.length} stream(s) fold to different state in the two stores`);
          }),
        ),
      );
    });
}

/**
 * Where a stream that diverged differs, and both heads: "stream X differs from the source from revision 5 on (the
 * source's head is revision 9, the destination's revision 8)". Reads the stream from both stores side by side.
 */
async function describeDivergence(source: EventStore, destination: EventStore, message: string): Promise<string> {
  const stream = /\bstream (\S+) differs from the source\b/.exec(message)?.[1];
  if (stream === undefined) return message;
  const [a, b] = await Promise.all([source.read(stream), destination.read(stream)]);
  const heads = `the source's head is revision ${a.revision}, the destination's revision ${b.revision}`;
  const first = await firstDifference(a, b);
  const where = first === undefined ? 'somewhere before the revisions both stores keep' : `from revision ${first} on`;
  return `stream ${stream} differs from the source ${where} (${heads})`;
}

/** The first revision whose event (or snapshot) is not the same in the two reads; undefined when none both keep differs. */
async function firstDifference(a: StreamRead, b: StreamRead): Promise<number | undefined> {
  const snapshots = [a.snapshot, b.snapshot];
  if (a.snapshot && b.snapshot && a.snapshot.revision === b.snapshot.revision && canonicalJson(a.snapshot.state) !== canonicalJson(b.snapshot.state))
    return a.snapshot.revision;
  // Events a snapshot of the other read covers cannot be compared: compare from past both snapshots.
  const from = Math.max(...snapshots.map((snapshot) => snapshot?.revision ?? 0)) + 1;
  const left = a.events[Symbol.asyncIterator]();
  const right = b.events[Symbol.asyncIterator]();
  try {
    const next = async (events: AsyncIterator<RecordedEvent>) => {
      for (;;) {
        const step = await events.next();
        if (step.done || step.value.revision >= from) return step.done ? undefined : step.value;
      }
    };
    for (;;) {
      const [x, y] = await Promise.all([next(left), next(right)]);
      if (x === undefined || y === undefined) return undefined;
      if (x.type !== y.type || x.eventId !== y.eventId || canonicalJson(x.data) !== canonicalJson(y.data)) return x.revision;
    }
  } finally {
    await Promise.all([left.return?.(), right.return?.()]);
  }
}

/** The streams the service writes that fold to different state in the two stores. */
async function compareFolds(source: EventStore, destination: EventStore): Promise<string[]> {
  const mismatches: string[] = [];
  for await (const { stream } of source.streams()) {
    const reducer = reducerOf(stream);
    if (!reducer) continue;
    const [a, b] = await Promise.all([foldStream(source, stream, reducer), foldStream(destination, stream, reducer)]);
    if (a.revision !== b.revision || canonicalJson(reducer.toSnapshot(a.state)) !== canonicalJson(reducer.toSnapshot(b.state))) mismatches.push(stream);
  }
  return mismatches;
}
