import type { Command } from 'commander';
import { prepareReducer } from '@sessionfold/core/kernel';
import { materialise, sessionReducer, sessionStream, type SessionStreamState } from '@sessionfold/core/session';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { notFound, refused } from '../exit-codes.js';
import { examples } from '../help.js';
import { integerText, parseArg } from '../parse.js';
import { progress } from '../progress.js';

const optionsSchema = z.object({ toRevision: integerText(1).optional(), events: z.boolean().default(false) });

/**
 * `replay <session-id>`: folds the session's stream from its snapshot and events, printing each event applied
 * (with --events) and the resulting record once at the end, so only the folded record is held in memory.
 */
export function registerReplay(program: Command): void {
  program
    .command('replay')
    .description('fold a session from its snapshot (if any) and events: how it got into its state')
    .argument('<session-id>', 'the session id (a UUID)')
    .option('--to-revision <n>', 'stop after this revision')
    .option('--events', 'print each event applied')
    .addHelpText('after', examples('sessionfold replay 0f8e…-… -s file:./data --events', 'sessionfold replay 0f8e…-… --to-revision 3 --json'))
    .action(async (rawId: unknown, rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const id = parseArg(z.string().uuid('expected a session id (a UUID)'), rawId, '<session-id>').toLowerCase();
      const options = parseArg(optionsSchema, rawOptions, 'options');
      const { out } = context;
      await withStore(context, 'read', async ({ store }) => {
        const stream = sessionStream(id);
        const read = await store.read(stream);
        if (read.revision === 0) throw notFound(`no session ${id}`);
        const prepared = prepareReducer(sessionReducer);
        let state: SessionStreamState = sessionReducer.initial(stream);
        let revision = 0;
        if (read.snapshot) {
          // Through the prepared reducer: an older snapshot is migrated and older events upcast, as every fold does.
          prepared.check(stream, read.snapshot);
          if (options.toRevision !== undefined && options.toRevision < read.snapshot.revision) {
            throw refused(
              `revision ${options.toRevision} is compacted: events up to revision ${read.snapshot.revision} were folded into a snapshot and are gone`,
              `Try: --to-revision ${read.snapshot.revision} or more`,
            );
          }
          state = prepared.restore(stream, read.snapshot);
          revision = read.snapshot.revision;
          if (options.events) await emit({ kind: 'snapshot', revision });
        }
        const bar = progress(out, 'replay', read.revision - revision);
        try {
          for await (const event of read.events) {
            if (options.toRevision !== undefined && event.revision > options.toRevision) break;
            state = prepared.apply(state, event);
            revision = event.revision;
            bar.tick();
            if (options.events) await emit({ kind: 'event', revision: event.revision, type: event.type, recordedAt: event.recordedAt, data: event.data });
          }
        } finally {
          bar.stop();
        }
        if (options.toRevision !== undefined && options.toRevision > read.revision) {
          out.log(`the stream ends at revision ${read.revision}, before --to-revision ${options.toRevision}: this is its latest state`);
        }
        const record = state.record ? materialise(state.record, state) : null;
        if (out.json) await out.line({ kind: 'result', revision, record });
        else await out.text(`${options.events ? '\n' : ''}state at revision ${revision}:\n${JSON.stringify(record, null, 2)}`);
      });

      async function emit(item: { kind: string; revision: number; type?: string; recordedAt?: string; data?: unknown }): Promise<void> {
        if (out.json) return out.line(item);
        if (item.kind === 'snapshot') return out.text(`@${item.revision} snapshot (events up to here were compacted)`);
        return out.text(`@${item.revision} ${item.recordedAt ?? ''} ${item.type ?? ''} ${JSON.stringify(item.data)}`);
      }
    });
}
