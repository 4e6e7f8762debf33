import type { ObserverCall } from '../../kernel/observer.js';
import {
  decideCompleteIngress,
  decideFailIngress,
  decideReleaseInterruptedIngress,
  decideRequestIngress,
  decideRetryIngress,
  decideStartIngress,
} from '../decisions.js';
import { sessionIdOfStream } from '../ids.js';
import { inputSchemas } from '../inputs.js';
import { ingressStops, type SessionHistoryObserver } from '../observer.js';
import type { SessionHistory } from '../service.js';
import { inputArgument, sessionArgument } from './call.js';
import { changeSession, completeSession, recordOf, type ServiceParts } from './parts.js';

/** The methods that hand a session to its ingress and record how each attempt went. */
export function ingressCalls<S>(
  parts: ServiceParts,
  observe: ObserverCall<SessionHistoryObserver>,
): Pick<SessionHistory<S>, 'requestIngress' | 'startIngress' | 'completeIngress' | 'failIngress' | 'retryIngress' | 'releaseInterruptedIngress'> {
  const { calls, sessions, projection, decisionOptions: options } = parts;
  return {
    requestIngress: calls.write([sessionArgument, inputArgument(inputSchemas.checkpoint)], (stream, input) =>
      changeSession<S>(parts, stream, (state, at) => decideRequestIngress(state, input, at, options)),
    ),

    startIngress: calls.write([sessionArgument, inputArgument(inputSchemas.startIngress)], (stream, input) =>
      changeSession<S>(parts, stream, (state, at) => decideStartIngress(state, input, at)),
    ),

    completeIngress: calls.write([sessionArgument, inputArgument(inputSchemas.completeIngress)], (stream, input) =>
      completeSession<S>(parts, stream, (state, at) => decideCompleteIngress(state, input, at, options)),
    ),

    failIngress: calls.write([sessionArgument, inputArgument(inputSchemas.failIngress)], async (stream, input) => {
      const result = await sessions.mutate(stream, (state, at) => decideFailIngress(state, input, at, options));
      for (const stopped of ingressStops(result.state.sessionId, result.events)) observe('ingressStopped', stopped);
      return recordOf<S>(result.state);
    }),

    retryIngress: calls.write([sessionArgument, inputArgument(inputSchemas.retryIngress)], (stream, input) =>
      changeSession<S>(parts, stream, (state, at) => decideRetryIngress(state, input, at, options)),
    ),

    releaseInterruptedIngress: calls.write([], async () => {
      await projection.catchUp();
      const released: string[] = [];
      for (const [stream] of projection.sessionsInPhase('ingress_in_progress')) {
        const result = await sessions.mutate(stream, (state, at) => decideReleaseInterruptedIngress(state, at, options));
        if (result.events.length > 0) released.push(sessionIdOfStream(stream) ?? stream);
      }
      return released;
    }),
  };
}
