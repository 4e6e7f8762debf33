import { decideReleaseStartKey, decideStart } from './decisions.js';
import { SessionHistoryError, messages } from './errors.js';
import type { SessionEvent, StartKeyEvent } from './events.js';
import { legacySessionIdForStart, sessionIdForStart, sessionStream, startKeyStream } from './ids.js';
import type { StartSession } from './inputs.js';
import type { SessionStreamState, StartKeyState } from './model.js';
import { StreamGoneError, type StreamWriter, type Written } from './stream-writer.js';

/** A session that a start may hand back: it exists and has not completed. */
function isLive(state: SessionStreamState): boolean {
  return state.record !== null && state.record.phase !== 'complete';
}

/**
 * Idempotent starts with a fresh session id for every life of a start key.
 *
 * The key's stream records the lives that ended: the `n`-th session of key `k` has the id
 * `sessionIdForStart(k, n)`, and its completion binds and releases incarnation `n` there before the session's
 * stream is deleted. A start creates or finds incarnation `bindings + 1` (`SessionStarted` at `never_existed`:
 * of racing starters one creates it, the others find it) and writes nothing else, so a start costs one append.
 * A session found complete whose completion is not finished yet is released first, which moves the key on. A
 * starter that was overtaken — the key stream it read showed an incarnation that has since lived and ended —
 * cannot bring that session back: its stream was deleted, so the store refuses to create it again, and the
 * starter reads the key stream again (which shows the release, written before the delete) and moves on.
 * A binding left unreleased (written by a start of an earlier release) is followed while its session lives. A
 * session of release 0.1.0 (id derived from the key alone, no key stream) is returned while it lives, and its
 * key starts at incarnation 1 after it.
 */
export class SessionStarts {
  readonly #sessions: StreamWriter<SessionStreamState, SessionEvent>;
  readonly #keys: StreamWriter<StartKeyState, StartKeyEvent>;
  readonly #rounds: number;

  constructor(writers: { sessions: StreamWriter<SessionStreamState, SessionEvent>; keys: StreamWriter<StartKeyState, StartKeyEvent> }, rounds: number) {
    this.#sessions = writers.sessions;
    this.#keys = writers.keys;
    this.#rounds = rounds;
  }

  /** The live session of `input.idempotencyId`, created when there is none; `created` tells which. */
  async start(input: StartSession): Promise<{ state: SessionStreamState; created: boolean }> {
    const key = input.idempotencyId;
    const keyStream = startKeyStream(key);
    // Binds (when needed) and releases a session's incarnation: the step of its completion that moves the key on.
    const release = (sessionId: string) => this.#keys.mutate(keyStream, (state, at) => decideReleaseStartKey(state, key, sessionId, at));
    for (let round = 0; round < this.#rounds; round++) {
      const { bindings } = (await this.#keys.load(keyStream)).state;
      const latest = bindings.at(-1);
      const boundId = latest ? (latest.released ? undefined : latest.sessionId) : legacySessionIdForStart(key);
      if (boundId !== undefined) {
        const bound = (await this.#sessions.load(sessionStream(boundId))).state;
        if (isLive(bound)) return { state: bound, created: false };
        // A bound session that completed: release it, which its completion would have done next. (A session of
        // release 0.1.0 has no binding to release; its key simply starts at incarnation 1.)
        if (bound.record !== null && latest !== undefined) {
          await release(boundId);
          continue;
        }
      }

      const incarnation = bindings.length + 1;
      const id = sessionIdForStart(key, incarnation);
      const stream = sessionStream(id);
      let started: Written<SessionStreamState, SessionEvent>;
      try {
        started = await this.#sessions.create(stream, (state, at) => decideStart(state, input, at));
      } catch (error) {
        // This incarnation lived and ended since the key stream was read: its release is there now.
        if (error instanceof StreamGoneError) continue;
        throw error;
      }
      if (started.events.length > 0) return { state: started.state, created: true };
      if (isLive(started.state)) return { state: started.state, created: false };
      // This incarnation completed and its completion is not finished yet.
      await release(id);
    }
    throw SessionHistoryError.conflict(messages.tooManyConflicts);
  }
}
