import type { Command } from 'commander';
import { contextOf, withStore } from '../context.js';
import { examples } from '../help.js';
import { countStore, fileStoreWriter, formatBytes, sizeOnDisk } from '../store-facts.js';

/** `info`: kind, location, counts, head position, size on disk and the store's status. */
export function registerInfo(program: Command): void {
  program
    .command('info')
    .description(
      "what the store is and holds: kind, location, sessions, streams, events, head position, size on disk, and the store's status when it reports one",
    )
    .addHelpText('after', examples('sessionfold info --store file:./data', 'sessionfold info -s sqlite:./sessions.db --json'))
    .action(async (_options: unknown, command: Command) => {
      const context = contextOf(command);
      await withStore(context, 'read', async ({ store, location, where }) => {
        const counts = await countStore(store);
        const reported = store.status ? await store.status() : undefined;
        // Until a store reports its own status, a file store's writer is read from its LOCK file.
        const status = reported ?? (location.kind === 'file' ? await fileStoreWriter(location.directory) : undefined);
        // A server's store says how much it takes (PostgreSQL: its tables and indexes) in its status.
        const total = reported?.details['totalBytes'];
        const bytes = (await sizeOnDisk(location)) ?? (typeof total === 'number' ? total : undefined);
        const info = { kind: location.kind, location: where, ...counts, sizeOnDisk: bytes ?? null, status: status ?? null };
        if (context.out.json) return context.out.document(info);
        const rows: [string, string][] = [
          ['kind', location.kind],
          ['location', where],
          ['sessions', String(counts.sessions)],
          ['streams', String(counts.streams)],
          ['events', String(counts.events)],
          ['head position', String(counts.headPosition)],
          ['size on disk', bytes === undefined ? 'n/a' : formatBytes(bytes)],
        ];
        if (status !== undefined) rows.push(['status', JSON.stringify(status)]);
        for (const [name, value] of rows) await context.out.text(`${name.padEnd(14)} ${value}`);
      });
    });
}
