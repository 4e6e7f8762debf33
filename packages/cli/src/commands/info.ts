import type { Command } from 'commander';
import type { StoreStatus } from '@sessionfold/core/kernel';
import { contextOf, withStore } from '../context.js';
import { examples } from '../help.js';
import { countStore, formatBytes, sizeOnDisk } from '../store-facts.js';

/** `info`: kind, location, counts, head position, size on disk and the store's status. */
export function registerInfo(program: Command): void {
  program
    .command('info')
    .description("what the store is and holds: kind, location, sessions, streams, events, head position, size on disk, and the store's status")
    .addHelpText('after', examples('sessionfold info --store file:./data', 'sessionfold info -s sqlite:./sessions.db --json'))
    .action(async (_options: unknown, command: Command) => {
      const context = contextOf(command);
      await withStore(context, 'read', async ({ store, location, where }) => {
        const counts = await countStore(store);
        const status = await store.status();
        // A server's store says how much it takes (PostgreSQL: its tables and indexes) in its status.
        const total = status.details['totalBytes'];
        const bytes = (await sizeOnDisk(location)) ?? (typeof total === 'number' ? total : undefined);
        const info = { kind: location.kind, location: where, ...counts, sizeOnDisk: bytes ?? null, status };
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
        for (const [name, value] of rows) await context.out.text(`${name.padEnd(14)} ${value}`);
        await context.out.text('status');
        for (const [name, value] of statusRows(status)) await context.out.text(`  ${name.padEnd(20)} ${value}`);
      });
    });
}

/** A value of a store's status, for people: text as it is, nothing as "-", a list or object as compact JSON. */
function shown(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** `lastPosition` as "last position". */
const words = (key: string) => key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();

/**
 * The rows `info` shows of a store's status, one fact a line: the feed's last position, each transaction holding
 * writers back, then the store's own details.
 */
function statusRows(status: StoreStatus): [string, string][] {
  const rows: [string, string][] = [];
  for (const [key, value] of Object.entries(status)) {
    if (key === 'kind') continue;
    if (key === 'holdingBack' && Array.isArray(value)) {
      if (value.length === 0) rows.push(['holding back', 'none']);
      for (const held of value as { pid?: unknown; ageMs?: unknown; state?: unknown; waiting?: unknown }[])
        rows.push(['holding back', `pid ${shown(held.pid)}: ${shown(held.state)} for ${shown(held.ageMs)} ms, ${shown(held.waiting)} waiting`]);
    } else if (key === 'details' && value !== null && typeof value === 'object') {
      for (const [name, detail] of Object.entries(value)) rows.push([words(name), shown(detail)]);
    } else rows.push([words(key), shown(value)]);
  }
  return rows;
}
