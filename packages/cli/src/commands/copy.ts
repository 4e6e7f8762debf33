import type { Command } from 'commander';
import { copyStore, foldStream, InvalidInputError, type EventStore } from '@sessionfold/core/kernel';
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
                throw refused(`the destination diverged: ${error.message}`, 'Try: copy into an empty store');
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
