import type { Command } from 'commander';
import { SessionHistoryError } from '@sessionfold/core';
import { isUuid } from '@sessionfold/core/session';
import { contextOf, withStore } from '../context.js';
import { notFound } from '../exit-codes.js';
import { examples } from '../help.js';
import { withReadOnlyHistory } from '../history.js';
import { parseArg, sessionIdText } from '../parse.js';

/** `show <session-id>`: the materialised record, as the service's `get` returns it. */
export function registerShow(program: Command): void {
  program
    .command('show')
    .description('the materialised record of a session (or of a completed one, by its session object id)')
    .argument('<session-id>', 'a session id, or the session object id of a completed session')
    .addHelpText('after', examples('sessionfold show 0f8e…-… -s file:./data', 'sessionfold show A1234567 --json'))
    .action(async (rawId: unknown, _options: unknown, command: Command) => {
      const context = contextOf(command);
      const id = parseArg(sessionIdText, rawId, '<session-id>');
      await withStore(context, 'read', async ({ store }) =>
        withReadOnlyHistory(store, async (history) => {
          const record = await history.get(id).catch((error: unknown) => {
            // Not a UUID and not a receipt's id: nothing by that name, rather than a malformed request.
            if (error instanceof SessionHistoryError && error.code === 'invalid_request' && !isUuid(id)) throw notFound(`no session or receipt ${id}`);
            if (error instanceof SessionHistoryError && error.code === 'not_found') throw notFound(`no session ${id}`, 'Try: sessionfold list');
            throw error;
          });
          await context.out.document(record);
        }),
      );
    });
}
