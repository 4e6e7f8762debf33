import type { Command } from 'commander';
import { type EventStore, foldStream } from '@sessionfold/core/kernel';
import { decideReleaseStartKey, sessionReducer, sessionStream, startKeyReducer, startKeyStream } from '@sessionfold/core/session';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { notFound } from '../exit-codes.js';
import { examples } from '../help.js';
import { parseArg } from '../parse.js';

/** `delete <session-id> [--dry-run]`: erase a session's stream, snapshot and the blobs only it owns. */
export function registerDelete(program: Command): void {
  program
    .command('delete')
    .description('erase a session: its events, snapshot and the blobs no other stream owns (a right-to-erasure request)')
    .argument('<session-id>', 'the session id (a UUID)')
    .option('--dry-run', 'print what would be removed; change nothing')
    .addHelpText(
      'after',
      examples('sessionfold delete 0f8e…-… -s file:./data --dry-run', 'sessionfold delete 0f8e…-… -s file:./data --json') +
        "\n\nBefore the session is erased, its start key's stream records its life as ended (and is kept), so its start idempotency id never hands out the erased id again.",
    )
    .action(async (rawId: unknown, rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const id = parseArg(z.string().uuid('expected a session id (a UUID)'), rawId, '<session-id>').toLowerCase();
      const { dryRun } = parseArg(z.object({ dryRun: z.boolean().default(false) }), rawOptions, 'options');
      const { out } = context;
      await withStore(context, dryRun ? 'read' : 'write', async ({ store }) => {
        const stream = sessionStream(id);
        const read = await store.read(stream);
        if (read.revision === 0) throw notFound(`no session ${id}`);
        let events = 0;
        for await (const _ of read.events) events++;
        const owned: string[] = [];
        for await (const sha of store.blobs(stream)) owned.push(sha);
        // A blob another stream also owns stays: only this session's own bytes are erased.
        const shared = new Set<string>();
        if (owned.length > 0) {
          const mine = new Set(owned);
          for await (const other of store.streams()) {
            if (other.stream === stream) continue;
            for await (const sha of store.blobs(other.stream)) if (mine.has(sha)) shared.add(sha);
          }
        }
        const blobs = owned.filter((sha) => !shared.has(sha));
        if (!dryRun) {
          await releaseStartKey(store, stream);
          await store.deleteStream(stream, { expectedRevision: read.revision });
        }
        const summary = {
          dryRun,
          sessionId: id,
          stream,
          revision: read.revision,
          events,
          snapshot: read.snapshot !== undefined,
          blobsRemoved: blobs,
          blobsKept: [...shared],
        };
        if (out.json) return out.document(summary);
        const verb = dryRun ? 'would remove' : 'removed';
        await out.text(
          `${verb} ${stream}: ${events} event(s)${read.snapshot ? ', its snapshot' : ''}, ${blobs.length} blob(s)${shared.size > 0 ? ` (${shared.size} shared blob(s) kept)` : ''}`,
        );
        for (const sha of blobs) await out.text(`  blob ${sha}`);
      });
    });
}

/**
 * Records in the key's stream that the session started by it has ended, as a completion does before it deletes
 * the stream: a later start with the key then derives a new id instead of the erased one.
 */
async function releaseStartKey(store: EventStore, stream: string): Promise<void> {
  const { state } = await foldStream(store, stream, sessionReducer);
  const key = state.startKey;
  if (key === null) return;
  const keyStream = startKeyStream(key);
  const keys = await foldStream(store, keyStream, startKeyReducer);
  const events = decideReleaseStartKey(keys.state, key, state.sessionId, new Date());
  if (events.length > 0) await store.append(keyStream, events, { expectedRevision: keys.revision === 0 ? 'no_stream' : keys.revision });
}
