import { buildCompletionReceipt, decideCheckpoint, decideComplete, decideRecordCompletion, decideRegister, decideStop } from '../decisions.js';
import { nextData } from '../data.js';
import { SessionHistoryError, messages } from '../errors.js';
import { sessionStream } from '../ids.js';
import { inputSchemas } from '../inputs.js';
import type { SessionHistory } from '../service.js';
import type { SessionStarts } from '../starts.js';
import { inputArgument, sessionArgument } from './call.js';
import { changeSession, completeSession, recordOf, type ServiceParts } from './parts.js';

/** The methods that start, register, change and end sessions (ingress aside: see `ingressCalls`). */
export function lifecycleCalls<S>(
  parts: ServiceParts,
  starts: SessionStarts,
  now: () => Date,
): Pick<SessionHistory<S>, 'start' | 'register' | 'stop' | 'checkpoint' | 'complete' | 'recordCompletion' | 'deleteSession'> {
  const { calls, sessions, completions, decisionOptions } = parts;
  const checkpoint = inputArgument(inputSchemas.checkpoint);
  return {
    start: calls.write([inputArgument(inputSchemas.start)], async (input) => {
      // A start's data is a value, so it is checked here, once, before any stream is touched.
      const data = nextData(input.data, null, decisionOptions.checkData);
      if (data instanceof SessionHistoryError) throw data;
      const result = await starts.start({ ...input, data });
      return { value: recordOf<S>(result.state), created: result.created };
    }),

    register: calls.write([inputArgument(inputSchemas.register)], (input) =>
      changeSession<S>(parts, sessionStream(input.id), (state, at) => decideRegister(state, input, at, decisionOptions)),
    ),

    stop: calls.write([sessionArgument], (stream) => changeSession<S>(parts, stream, decideStop)),

    checkpoint: calls.write([sessionArgument, checkpoint], (stream, input) =>
      changeSession<S>(parts, stream, (state, at) => decideCheckpoint(state, input, at, decisionOptions)),
    ),

    complete: calls.write([sessionArgument, checkpoint], (stream, input) =>
      completeSession<S>(parts, stream, (state, at) => decideComplete(state, input, at, decisionOptions)),
    ),

    recordCompletion: calls.write([inputArgument(inputSchemas.recordCompletion)], async (input) => {
      const receipt = buildCompletionReceipt(input, now());
      if (receipt instanceof SessionHistoryError) throw receipt;
      const stream = input.sessionId ? sessionStream(input.sessionId) : undefined;
      // The session records its completion first, so a crash before the delete is finished on the next open.
      if (stream) await sessions.mutate(stream, (state, at) => decideRecordCompletion(state, receipt, at, decisionOptions));
      await completions.ensureReceipt(receipt);
      if (stream) await completions.finish(stream);
    }),

    deleteSession: calls.write([sessionArgument], async (stream) => {
      const { state } = await sessions.load(stream);
      if (!state.record) throw SessionHistoryError.notFound();
      if (state.record.phase !== 'complete') throw SessionHistoryError.conflict(messages.notComplete);
      await completions.finish(stream, { delete: true });
    }),
  };
}

/**
 * Finishes the completions a crash interrupted (receipt recorded, start key released, stream deleted). A kept
 * session needs finishing only until its receipt is in the catalog (its start key is released by the next start
 * that finds it complete), so this does not visit every session ever kept.
 */
export async function finishInterruptedCompletions({ projection, completions }: ServiceParts): Promise<void> {
  const receipts = new Set(projection.catalog().state.receipts.map((receipt) => receipt.sessionObjectId));
  for (const [stream, { state }] of projection.sessionsInPhase('complete')) {
    if (state.kept !== true || (state.receipt !== null && !receipts.has(state.receipt.sessionObjectId))) await completions.finish(stream);
  }
}
