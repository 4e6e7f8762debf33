import type { Command } from 'commander';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { notFound } from '../exit-codes.js';
import { examples } from '../help.js';
import { formatChange, printStoredChanges } from '../format-change.js';
import { integerText, parseArg, streamIdText } from '../parse.js';

/** `read <stream> [--from-revision N]`: the stream's raw events (its snapshot first, when it covers the start). */
export function registerRead(program: Command): void {
  program
    .command('read')
    .description("a stream's raw events, one JSON object per line (its snapshot first, as a $snapshot record, when one covers the start)")
    .argument('<stream>', 'the stream id')
    .option('--from-revision <n>', 'start at this revision (default 1)')
    .addHelpText('after', examples('sessionfold read session-0f8e…-… -s file:./data', 'sessionfold read catalog --from-revision 10 --json'))
    .action(async (rawStream: unknown, rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const stream = parseArg(streamIdText, rawStream, '<stream>');
      const { fromRevision } = parseArg(z.object({ fromRevision: integerText(1).optional() }), rawOptions, '--from-revision');
      await withStore(context, 'read', async ({ store }) => {
        const read = await store.readStored(stream, fromRevision === undefined ? {} : { fromRevision });
        if (read.revision === 0) throw notFound(`no stream ${stream}`);
        if (read.snapshot) {
          await formatChange(context.out, { streamId: stream, type: '$snapshot', revision: read.snapshot.revision, data: read.snapshot as never });
        }
        await printStoredChanges(context.out, read.events);
      });
    });
}
