import { foldStream, type EventStore } from '@sessionfold/core/kernel';
import { openSessionHistory, type SessionHistory } from '@sessionfold/core';
import { isOpenCommand, sessionStream, sessionSummaryReducer } from '@sessionfold/core/session';

/** Runs `work` with a read-only session service on `store`: it finishes nothing and writes nothing. */
export async function withReadOnlyHistory<T>(store: EventStore, work: (history: SessionHistory) => Promise<T>): Promise<T> {
  const history = await openSessionHistory({ store, readOnly: true });
  try {
    return await work(history);
  } finally {
    await history.close();
  }
}

/** How many commands of session `id` are pending or processing (folded without its log). */
export async function openCommandCount(store: EventStore, id: string): Promise<number> {
  const { state } = await foldStream(store, sessionStream(id), sessionSummaryReducer);
  return state.commands.filter(isOpenCommand).length;
}
