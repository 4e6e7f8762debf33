import type { Command } from 'commander';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { examples } from '../help.js';
import { parseArg } from '../parse.js';

/** Width of the stream column: wide enough for session streams, longer names push the revision right. */
const STREAM_COLUMN = 48;

/** `streams [--prefix P]`: every stream with its revision, one per line. */
export function registerStreams(program: Command): void {
  program
    .command('streams')
    .description('every stream and its revision, in name order')
    .option('--prefix <prefix>', 'only streams whose name starts with this')
    .addHelpText('after', examples('sessionfold streams -s file:./data', 'sessionfold streams --prefix session- --json'))
    .action(async (rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const { prefix } = parseArg(z.object({ prefix: z.string().optional() }), rawOptions, '--prefix');
      await withStore(context, 'read', async ({ store }) => {
        // Streamed, not gathered into a table: a store may hold millions. Names are at most 128 characters.
        if (!context.out.json) await context.out.text(`${'STREAM'.padEnd(STREAM_COLUMN)} REVISION`);
        for await (const entry of store.streams(prefix === undefined ? {} : { prefix })) {
          if (context.out.json) await context.out.line(entry);
          else await context.out.text(`${entry.stream.padEnd(STREAM_COLUMN)} ${entry.revision}`);
        }
      });
    });
}
