import { z } from 'zod';
import { cloneJson } from '../../kernel/json.js';
import { decideCancelCommand, decideClaimCommand, decideCompleteCommand, decideEnqueue, findCommand } from '../decisions.js';
import { SessionHistoryError, messages } from '../errors.js';
import { commandIdSchema, inputSchemas } from '../inputs.js';
import type { SessionCommand } from '../model.js';
import type { SessionHistory } from '../service.js';
import { inputArgument, sessionArgument, type Argument } from './call.js';
import type { ServiceParts, SessionDecision } from './parts.js';

const commandArgument = ['commandId', commandIdSchema] as const satisfies Argument;
/** `completeCommand`'s input, which may be left out. */
const outcomeArgument = inputArgument(z.preprocess((value) => value ?? {}, inputSchemas.completeCommand));

/** The methods of the sessions' command queues. */
export function commandCalls(parts: ServiceParts): Pick<SessionHistory, 'enqueue' | 'commandHeads' | 'claimCommand' | 'completeCommand' | 'cancelCommand'> {
  const { calls, sessions, projection } = parts;

  // Exact within this process: every enqueue decided here gets a number above every one decided or seen before.
  let lastEnqueueOrder = 0;
  const nextEnqueueOrder = (): number => {
    lastEnqueueOrder = Math.max(lastEnqueueOrder, projection.highestEnqueueOrder()) + 1;
    projection.noteEnqueueOrder(lastEnqueueOrder);
    return lastEnqueueOrder;
  };

  /** Decides `decide` on the session holding command `commandId`, found through the projection; answers with the command. */
  const changeCommand = async (commandId: string, decide: SessionDecision): Promise<SessionCommand> => {
    // A command's session never changes, so a known one needs no catch-up; an unknown one may be another process's.
    let stream = projection.streamOfCommand(commandId);
    if (!stream) {
      await projection.catchUp();
      stream = projection.streamOfCommand(commandId);
    }
    if (!stream) throw SessionHistoryError.notFound();
    // A kept completed session no longer changes, its commands included.
    const { state } = await sessions.mutate(stream, (current, at) =>
      current.kept && current.record?.phase === 'complete' ? SessionHistoryError.conflict(messages.sessionComplete) : decide(current, at),
    );
    const command = findCommand(state, commandId);
    if (!command) throw SessionHistoryError.notFound();
    return cloneJson(command);
  };

  return {
    enqueue: calls.write([sessionArgument, inputArgument(inputSchemas.enqueue)], async (stream, input) => {
      // One number per call, taken only by a decision that creates the command: a decision made again (after a
      // refusal on the state this process held, or a lost race) keeps it, so no number is noted that no event holds.
      let order: number | undefined;
      const orderOfCall = () => (order ??= nextEnqueueOrder());
      const result = await sessions.mutate(stream, (state, at) => decideEnqueue(state, input, at, orderOfCall));
      const command = result.state.commands.find((candidate) => candidate.idempotencyId === input.idempotencyId);
      if (!command) throw SessionHistoryError.notFound();
      projection.noteCommand(command.id, stream);
      return { value: cloneJson(command), created: result.events.length > 0 };
    }),

    commandHeads: calls.call([], async () => {
      await projection.catchUp();
      return projection.commandHeads();
    }),

    claimCommand: calls.write([commandArgument, inputArgument(inputSchemas.claimCommand.optional())], (commandId, claim) =>
      changeCommand(commandId, (state, at) => decideClaimCommand(state, commandId, at, claim)),
    ),

    completeCommand: calls.write([commandArgument, outcomeArgument], (commandId, { outcome, worker }) =>
      changeCommand(commandId, (state, at) => decideCompleteCommand(state, commandId, outcome, at, worker)),
    ),

    cancelCommand: calls.write([commandArgument], (commandId) => changeCommand(commandId, (state, at) => decideCancelCommand(state, commandId, at))),
  };
}
