import { inputSchemas } from '../inputs.js';
import { listPage } from '../list-query.js';
import type { SessionHistory } from '../service.js';
import { receiptRecord } from '../view.js';
import { parseArgument, sessionArgument, type Argument } from './call.js';
import { recordOf, type ServiceParts } from './parts.js';

const listOptionsArgument = ['options', inputSchemas.list] as const satisfies Argument;
const queryArgument = ['query', inputSchemas.listPage] as const satisfies Argument;

/**
 * The methods that read: one session as stored, and the listings, answered from the projection once it has caught
 * up with the store's feed (so they see what every process committed before the call).
 */
export function queryCalls<S>(parts: ServiceParts): Pick<SessionHistory<S>, 'list' | 'listPage' | 'get' | 'health'> {
  const { calls, sessions, projection } = parts;
  return {
    list: calls.call([listOptionsArgument], async ({ phase, orderBy }) => {
      await projection.catchUp();
      return projection.list(phase, orderBy);
    }),

    listPage: calls.call([queryArgument], async (query) => {
      await projection.catchUp();
      return listPage(projection.listSource(), query);
    }),

    get: (id) =>
      calls.run(async () => {
        await projection.catchUp();
        const receipt = projection.catalog().state.receipts.find((candidate) => candidate.sessionObjectId === id);
        if (receipt) {
          // A kept session is its own best record; the receipt alone stands for one whose stream was deleted.
          const kept = projection.keptStreamOf(id);
          const folded = kept === undefined ? undefined : (await sessions.load(kept)).state;
          return folded?.record ? recordOf<S>(folded) : receiptRecord<S>(receipt, false);
        }
        return recordOf<S>((await sessions.load(parseArgument(sessionArgument, id))).state);
      }),

    health: calls.call([], () => projection.catchUp()),
  };
}
