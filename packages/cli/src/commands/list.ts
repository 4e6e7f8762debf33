import type { Command } from 'commander';
import type { SessionSummary } from '@sessionfold/core';
import { phaseSchema } from '@sessionfold/core/session';
import { z } from 'zod';
import { contextOf, withStore } from '../context.js';
import { examples } from '../help.js';
import { openCommandCount, withReadOnlyHistory } from '../history.js';
import { parseArg } from '../parse.js';

/** `list [--phase P]`: sessions (id, phase, version, updated, open commands, type, last activity), then receipts. */
export function registerList(program: Command): void {
  program
    .command('list')
    .description('sessions (id, phase, version, updated, open commands, type, last activity), completed ones kept included, then completion receipts')
    .option('--phase <phase>', `only sessions in this phase: ${phaseSchema.options.join(', ')}`)
    .addHelpText('after', examples('sessionfold list -s file:./data', 'sessionfold list --phase ingress_failed --json'))
    .action(async (rawOptions: unknown, command: Command) => {
      const context = contextOf(command);
      const { phase } = parseArg(z.object({ phase: phaseSchema.optional() }), rawOptions, '--phase');
      await withStore(context, 'read', async ({ store }) =>
        withReadOnlyHistory(store, async (history) => {
          const records = await history.list(phase === undefined ? undefined : { phase });
          // A receipt's record is named by its session object id; sessions come first, as the listing promises.
          const isReceipt = (record: SessionSummary) => record.phase === 'complete' && record.state['sessionObjectId'] === record.id;
          const sessions = records.filter((record) => !isReceipt(record));
          const receipts = records.filter(isReceipt);
          const rows = [];
          for (const record of sessions) {
            rows.push({
              id: record.id,
              phase: record.phase,
              version: record.version,
              updatedAt: record.updatedAt,
              openCommands: await openCommandCount(store, record.id),
              sessionType: record.state.sessionType,
              lastActivityAt: record.lastActivityAt,
            });
          }
          const receiptRows = receipts.map((record) => ({
            sessionObjectId: record.id,
            committedAt: record.updatedAt,
            receipt: record.state['commitReceipt'] ?? null,
          }));
          if (context.out.json) return context.out.document({ sessions: rows, receipts: receiptRows });
          await context.out.table(
            ['ID', 'PHASE', 'VERSION', 'UPDATED', 'OPEN COMMANDS', 'TYPE', 'LAST ACTIVITY'],
            rows.map((row) => [
              row.id,
              row.phase,
              String(row.version),
              row.updatedAt,
              String(row.openCommands),
              typeof row.sessionType === 'string' ? row.sessionType : '',
              row.lastActivityAt,
            ]),
          );
          if (receiptRows.length > 0) {
            await context.out.text('');
            await context.out.table(
              ['RECEIPT (SESSION OBJECT)', 'COMMITTED'],
              receiptRows.map((row) => [row.sessionObjectId, row.committedAt]),
            );
          }
        }),
      );
    });
}
