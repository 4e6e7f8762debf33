import { cloneJson } from '../../kernel/json.js';
import { decideAppendTranscript, decideStageObject, objectStagingRefusal } from '../decisions.js';
import { SessionHistoryError } from '../errors.js';
import { inputSchemas, pendingIdSchema } from '../inputs.js';
import type { LogEntry } from '../model.js';
import { logEntry } from '../reducer.js';
import type { SessionHistory } from '../service.js';
import { sanitiseFileName, sanitiseMediaType } from '../view.js';
import { inputArgument, sessionArgument, type Argument } from './call.js';
import type { ServiceParts } from './parts.js';

const pendingIdArgument = ['pendingId', pendingIdSchema] as const satisfies Argument;

/**
 * The methods of a session's log: transcript lines, and staged objects, whose bytes are blobs the session stream
 * owns and whose metadata are `ObjectStaged` log entries.
 */
export function logCalls(parts: ServiceParts): Pick<SessionHistory, 'appendTranscript' | 'stageObject' | 'object'> {
  const { calls, store, sessions } = parts;
  return {
    appendTranscript: calls.write([sessionArgument, inputArgument(inputSchemas.appendTranscript)], async (stream, input) => {
      const { state } = await sessions.mutate(stream, (current, at) => decideAppendTranscript(current, input, at));
      return cloneJson(logEntry(state, state.logSize) as LogEntry);
    }),

    stageObject: calls.write([sessionArgument, inputArgument(inputSchemas.stageObject)], async (stream, { fileName, mediaType, bytes }) => {
      // Refused before storing bytes that no event would ever own.
      const refusal = objectStagingRefusal((await sessions.load(stream)).state);
      if (refusal) throw refusal;
      const sha256 = await store.putBlob(stream, bytes);
      const result = await sessions.mutate(stream, (state, at) => decideStageObject(state, { fileName, mediaType, size: bytes.byteLength, sha256 }, at));
      const staged = result.events.find((event) => event.type === 'ObjectStaged');
      if (staged?.type !== 'ObjectStaged') throw new Error('staging an object appended no ObjectStaged event');
      return staged.data.pendingId;
    }),

    object: calls.call([sessionArgument, pendingIdArgument], async (stream, position) => {
      const folded = await sessions.load(stream);
      const staged = folded.exists ? logEntry(folded.state, position)?.object : undefined;
      if (!staged) throw SessionHistoryError.notFound();
      const bytes = await store.getBlob(staged.sha256);
      if (!bytes) throw SessionHistoryError.notFound();
      return { fileName: sanitiseFileName(staged.fileName), mediaType: sanitiseMediaType(staged.mediaType), bytes };
    }),
  };
}
