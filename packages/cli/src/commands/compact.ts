import type { Command } from 'commander';
import { compactStream, foldStream } from '@sessionfold/core/kernel';
import { sessionStream } from '@sessionfold/core/session';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { notFound, usageError } from '../exit-codes.js';
import { examples } from '../help.js';
import { interruptible } from '../interruption.js';
import { parseArg } from '../parse.js';
import { progress } from '../progress.js';
import { reducerOf } from '../reducers.js';
import { sizeOnDisk } from '../store-facts.js';

const optionsSchema = z.object({ all: z.boolean().default(false), dryRun: z.boolean().default(false) });

/** What compacting one stream did (or would do). */
interface Compacted {
  stream: string;
  /** The revision the snapshot is taken at. */
  revision: number;
  eventsDropped: number;
  /** Serialized size of the dropped events less the new snapshot's: what a journal-based store saves. */
  estimatedBytesSaved: number;
}

/** `compact [<session-id> | --all] [--dry-run]`: snapshot the folded state and drop the events it covers. */
export function registerCompact(program: Command): void {
  program
    .command('compact')
    .description('snapshot a session (or every stream the service writes, with --all) and drop the events the snapshot covers')
    .argument('[session-id]', 'the session to compact')
    .option('--all', 'every session, start-key and catalog stream')
    .option('--dry-run', 'print what would be dropped; change nothing')
    .addHelpText('after', examples('sessionfold compact 0f8e…-… -s file:./data --dry-run', 'sessionfold compact --all -s sqlite:./sessions.db --json'))
    .action(async (rawId: unknown, rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const options = parseArg(optionsSchema, rawOptions, 'options');
      const id = rawId === undefined ? undefined : parseArg(z.string().uuid('expected a session id (a UUID)'), rawId, '[session-id]').toLowerCase();
      if ((id === undefined) === !options.all) throw usageError('name one session, or pass --all', 'Try: sessionfold compact --all --dry-run');
      const { out } = context;
      await interruptible((interruption) =>
        withStore(context, options.dryRun ? 'read' : 'write', async ({ store, location }) => {
          const streams: string[] = [];
          if (id !== undefined) {
            const stream = sessionStream(id);
            if ((await store.read(stream)).revision === 0) throw notFound(`no session ${id}`);
            streams.push(stream);
          } else {
            for await (const { stream } of store.streams()) if (reducerOf(stream)) streams.push(stream);
          }
          const before = await sizeOnDisk(location);
          const bar = progress(out, 'compact', streams.length);
          const results: Compacted[] = [];
          try {
            for (const stream of streams) {
              await interruption.between(
                `${results.length} compacted stream(s) of ${streams.length}; each stream is compacted whole or not at all`,
                'Try: sessionfold compact --all again',
              );
              const result = await compactOne(stream, options.dryRun);
              if (result.eventsDropped > 0) results.push(result);
              bar.tick();
            }
          } finally {
            bar.stop();
          }
          const after = options.dryRun ? before : await sizeOnDisk(location);
          const eventsDropped = results.reduce((sum, result) => sum + result.eventsDropped, 0);
          const estimatedBytesSaved = results.reduce((sum, result) => sum + result.estimatedBytesSaved, 0);
          const bytesSaved = before === undefined || after === undefined ? null : before - after;
          const summary = { dryRun: options.dryRun, streams: results, eventsDropped, estimatedBytesSaved, bytesSaved };
          if (out.json) return out.document(summary);
          for (const result of results) {
            await out.text(
              `${options.dryRun ? 'would compact' : 'compacted'} ${result.stream} at revision ${result.revision}: ${result.eventsDropped} event(s) dropped`,
            );
          }
          await out.text(
            `${options.dryRun ? 'would drop' : 'dropped'} ${eventsDropped} event(s) in ${results.length} stream(s); ` +
              (options.dryRun || bytesSaved === null ? `about ${estimatedBytesSaved} bytes saved` : `${bytesSaved} bytes saved on disk`),
          );

          async function compactOne(stream: string, dryRun: boolean): Promise<Compacted> {
            const reducer = reducerOf(stream);
            if (!reducer) throw usageError(`no reducer for stream ${stream}`);
            const read = await store.read(stream);
            const from = read.snapshot?.revision ?? 0;
            let eventBytes = 0;
            let eventsDropped = 0;
            for await (const event of read.events) {
              eventsDropped++;
              eventBytes += JSON.stringify(event).length + 66;
            }
            const folded = await foldStream(store, stream, reducer);
            const snapshotBytes = JSON.stringify(reducer.toSnapshot(folded.state)).length;
            const previous = read.snapshot ? JSON.stringify(read.snapshot.state).length : 0;
            const estimate = { stream, revision: Math.max(folded.revision, from), eventsDropped, estimatedBytesSaved: eventBytes + previous - snapshotBytes };
            if (!dryRun && eventsDropped > 0) estimate.revision = await compactStream(store, stream, reducer);
            return estimate;
          }
        }),
      );
    });
}
