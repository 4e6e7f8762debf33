import type { Command } from 'commander';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { interruptible } from '../interruption.js';
import { examples } from '../help.js';
import { printChanges, printStoredChanges } from '../format-change.js';
import { integerText, parseArg } from '../parse.js';
import { endOfFeed, followChanges, lastChanges } from '../tail-feed.js';

const fromSchema = z.union([z.literal('start'), z.literal('end'), integerText(1)], { error: 'expected start, end or a position (a whole number ≥ 1)' });
const optionsSchema = z.object({ follow: z.boolean().default(false), from: fromSchema.optional(), lines: integerText(0).optional() });

/**
 * `tail`: the change feed as JSON lines. `--follow` keeps printing changes, including other processes' writes,
 * until interrupted; Ctrl-C ends it with exit 0.
 */
export function registerTail(program: Command): void {
  program
    .command('tail')
    .description('the change feed (every event, $snapshot and $deleted record, by position) as JSON lines')
    .option('-f, --follow', 'keep printing new changes, including those of other processes, until interrupted (Ctrl-C exits 0)')
    .option('--from <where>', 'start, end or a position, itself included (default: start)')
    .option('-n, --lines <n>', 'print only the last N changes already in the feed')
    .addHelpText(
      'after',
      examples(
        'sessionfold tail -s file:./data -n 20',
        'sessionfold tail --follow --from end -s sqlite:./sessions.db',
        'sessionfold tail --from 1500 --json | jq .type',
      ),
    )
    .action(async (rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const { out } = context;
      const options = parseArg(optionsSchema, rawOptions, 'options');
      // A stop ends the feed with exit 0; one stuck writing to a reader that stopped reading ends at the deadline.
      await interruptible(({ signal }) =>
        withStore(context, 'read', async ({ store }) => {
          const from = options.from === undefined || options.from === 'start' ? 1 : options.from === 'end' ? await endOfFeed(store) : options.from;
          if (options.lines === undefined) {
            // One read from `from` on: with --follow, the store's follow() yields what is there, then what comes.
            if (options.follow) await printChanges(out, followChanges(store, from, signal), signal);
            else await printStoredChanges(out, store.readAllStored({ fromPosition: from }), signal);
            return;
          }
          const last = await lastChanges(store, from, options.lines);
          for (const change of last.changes) if (out.appendLine(change)) await out.flush();
          if (options.follow) await printChanges(out, followChanges(store, last.next, signal), signal);
        }),
      );
    });
}
