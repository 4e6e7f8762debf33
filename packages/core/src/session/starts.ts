import type { EventStore } from '../kernel/port.js';
import { decideReleaseStartKey, decideStart } from './decisions.js';
import { SessionHistoryError, messages } from './errors.js';
import type { SessionEvent, StartKeyEvent } from './events.js';
import { legacySessionIdForStart, sessionIdForStart, sessionStream, startKeyStream } from './ids.js';
import type { StartSession } from './inputs.js';
import type { SessionStreamState, StartKeyState } from './model.js';
import type { StreamWriter } from './stream-writer.js';

/** A session that a start may hand back: it exists and has not completed. */
function isLive(state: SessionStreamState): boolean {
  return state.record !== null && state.record.phase !== 'complete';
}

/**
 * Idempotent starts with a fresh session id for every life of a start key.
 *
 * The key's stream records the lives that ended: the `n`-th session of key `k` has the id
 * `sessionIdForStart(k, n)`, and its completion binds and releases incarnation `n` there before the session's
 * stream is deleted. A start creates or finds incarnation `bindings + 1` (`SessionStarted` at `no_stream`: of
 * racing starters one creates it, the others find it) and writes nothing else, so a start costs one append.
 * A session found complete whose completion is not finished yet is released first, which moves the key on. A starter
 * that was overtaken — it created a session whose incarnation meanwhile lived and ended — sees the release
 * when it reads the key stream after its append, removes what it created and moves on to the next incarnation.
 * A binding left unreleased (written by a start of an earlier release) is followed while its session lives. A
 * session of release 0.1.0 (id derived from the key alone, no key stream) is returned while it lives, and its
 * key starts at incarnation 1 after it.
 */
export class SessionStarts {
  readonly #store: EventStore;
  readonly #sessions: StreamWriter<SessionStreamState, SessionEvent>;
  readonly #keys: StreamWriter<StartKeyState, StartKeyEvent>;
  readonly #rounds: number;

  constructor(
    store: EventStore,
    writers: { sessions: StreamWriter<SessionStreamState, SessionEvent>; keys: StreamWriter<StartKeyState, StartKeyEvent> },
    rounds: number,
  ) {
    this.#store = store;
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
      const started = await this.#sessions.mutate(stream, (state, at) => decideStart(state, input, at));
      if (started.events.length === 0) {
        if (isLive(started.state)) return { state: started.state, created: false };
        // This incarnation completed and its completion is not finished yet.
        await release(id);
        continue;
      }
      // Completion releases the key before it deletes the stream, so a life of this incarnation that ended before
      // the append above succeeded is in the key stream now.
      const released = (await this.#keys.load(keyStream)).state.bindings[incarnation - 1]?.released === true;
      if (!released) return { state: started.state, created: true };
      // Overtaken: this incarnation already lived and ended while this start was on its way, so the session just
      // created reuses its id. Nobody was handed it; remove it before trying the next one.
      await this.#sessions.exclusive(stream, async () => {
        await this.#store.deleteStream(stream, { expectedRevision: 'any' });
        this.#sessions.forget(stream);
      });
    }
    throw SessionHistoryError.conflict(messages.tooManyConflicts);
  }
}
