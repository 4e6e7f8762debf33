import { isDeepStrictEqual } from 'node:util';
import { foldStream, openSessionHistory, type SessionRecord } from '@sessionfold/core';
import { materialise, sessionReducer, sessionStream } from '@sessionfold/core/session';
import { fileStore } from '@sessionfold/store-file';

/** What the walk-through proved, for its caller (and its test) to check. */
export interface QuickstartResult {
  sessionId: string;
  sessionObjectId: string;
  /** The record as the live service returned it before completion. */
  live: SessionRecord;
  /** The same record rebuilt by folding the session's events read back from the store's log on disk. */
  replayed: SessionRecord;
  identical: boolean;
  /** Ids of the completed sessions listed after reopening the directory (kept, each under its session id). */
  completed: string[];
  /** The completed session, read back after reopening: its transcript is still there. */
  kept: SessionRecord;
}

/**
 * Takes one session through its whole life on a file store in `directory`, printing each step through `say`,
 * then reopens the directory and rebuilds the record from the session's events in the log on disk.
 */
export async function runQuickstart(directory: string, say: (line: string) => void = console.log): Promise<QuickstartResult> {
  const runKey = `quickstart-${new Date().toISOString()}`;
  let store = await fileStore({ directory });
  let history = await openSessionHistory({ store });

  const { value: started } = await history.start({ idempotencyId: runKey, startedAt: new Date().toISOString(), sessionType: 'conversation' });
  const id = started.id;
  const sessionObjectId = `archive-${id.slice(0, 8)}`;
  say(`1. started session ${id} (phase ${started.phase}, version ${started.version})`);

  await history.appendTranscript(id, { role: 'user-message', text: 'Summarise our meeting notes, please.' });
  await history.appendTranscript(id, { role: 'assistant-message', text: 'Here is the summary: three decisions, two open questions.' });
  say('2. appended two transcript lines (user, assistant)');

  const { value: queued } = await history.enqueue(id, { idempotencyId: 'reply-1', kind: 'message', payload: { text: 'Send the summary by mail' } });
  const claimed = await history.claimCommand(queued.id);
  const done = await history.completeCommand(queued.id, { outcome: { sent: true } });
  say(`3. command #${queued.sequence} "${queued.kind}": ${queued.status} → ${claimed.status} → ${done.status}`);

  const checkpointed = await history.checkpoint(id, {
    expectedVersion: started.version,
    state: { ...started.state, pendingTurn: false, roundsUsed: 1 },
    userActivity: true,
  });
  say(`4. checkpointed the control state (version ${started.version} → ${checkpointed.version})`);

  // The archive object the session will be filed under once ingress succeeds.
  const requested = await history.requestIngress(id, { expectedVersion: checkpointed.version, state: { ...checkpointed.state, sessionObjectId } });
  const attempt1 = await history.startIngress(id, { expectedVersion: requested.version, provenanceId: `run:${runKey}` });
  const failed = await history.failIngress(id, { expectedVersion: attempt1.version, stage: 'upload', code: 'timeout', message: 'archive did not answer' });
  say(`5. ingress attempt 1 failed (${failed.ingressFailures.length} failure kept); next attempt due at ${failed.ingressNextAttemptAt}`);
  const attempt2 = await history.startIngress(id, { expectedVersion: failed.version, provenanceId: `run:${runKey}` });
  say(`6. ingress attempt 2 started (phase ${attempt2.phase}, version ${attempt2.version})`);

  const live = await history.get(id);
  await history.close();
  await store.close();
  store = await fileStore({ directory, readOnly: true });
  const folded = await foldStream(store, sessionStream(id), sessionReducer);
  const lifecycle = folded.state.record;
  if (!lifecycle) throw new Error(`the stream of ${id} holds no lifecycle record`);
  const replayed = materialise(lifecycle, folded.state);
  const identical = isDeepStrictEqual(live, replayed);
  say(`7. reopened ${directory} read-only and replayed ${folded.revision} events: the record is ${identical ? 'identical' : 'DIFFERENT'}`);
  await store.close();

  store = await fileStore({ directory });
  history = await openSessionHistory({ store });
  const completed = await history.completeIngress(id, { expectedVersion: attempt2.version });
  say(`8. completed (phase ${completed.phase}): its events are kept, readable and closed to writes; its receipt for ${sessionObjectId} is in the catalog`);
  await history.close();
  await store.close();

  store = await fileStore({ directory });
  history = await openSessionHistory({ store });
  const listed = (await history.list({ phase: 'complete' })).map((record) => record.id);
  const kept = await history.get(sessionObjectId);
  say(
    `9. reopened ${directory}: ${listed.length} completed session(s), ${sessionObjectId} is ${kept.id} with ${kept.state.transcript.length} transcript lines`,
  );
  await history.close();
  await store.close();
  return { sessionId: id, sessionObjectId, live, replayed, identical, completed: listed, kept };
}
