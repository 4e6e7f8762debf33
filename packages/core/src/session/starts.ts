import type { EventStore } from '../kernel/port.js';
import { decideBindStartKey, decideStart } from './decisions.js';
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
 * The key's stream binds it to one session after another: the `n`-th session of key `k` has the id
 * `sessionIdForStart(k, n)`. A start returns the latest bound session while it lives. Otherwise it creates the
 * next one (`SessionStarted` at `no_stream`: of racing starters one creates it, the others find it) and
 * then binds it (at the key stream's revision: racing binders agree, since the id is derived). Completion
 * releases the binding before it deletes the stream, so a starter that was overtaken — it created a
 * session whose incarnation meanwhile lived and ended — sees the release, removes what it created and
 * moves on to the next incarnation. A session of release 0.1.0 (id derived from the key alone, no key
 * stream) is returned while it lives, and its key starts at incarnation 1 after it.
 */
export class SessionStarts {
  readonly #store: EventStore;
  readonly #sessions: StreamWriter<SessionStreamState, SessionEvent>;
  readonly #keys: StreamWriter<StartKeyState, StartKeyEvent>;
  readonly #rounds: number;

  constructor(store: EventStore, sessions: StreamWriter<SessionStreamState, SessionEvent>, keys: StreamWriter<StartKeyState, StartKeyEvent>, rounds: number) {
    this.#store = store;
    this.#sessions = sessions;
    this.#keys = keys;
    this.#rounds = rounds;
  }

  /** The live session of `input.idempotencyId`, created when there is none; `created` tells which. */
  async start(input: StartSession): Promise<{ state: SessionStreamState; created: boolean }> {
    const key = input.idempotencyId;
    const keyStream = startKeyStream(key);
    for (let round = 0; round < this.#rounds; round++) {
      const { bindings } = (await this.#keys.load(keyStream)).state;
      const latest = bindings.at(-1);
      const currentId = latest ? (latest.released ? undefined : latest.sessionId) : legacySessionIdForStart(key);
      if (currentId !== undefined) {
        const current = (await this.#sessions.load(sessionStream(currentId))).state;
        if (isLive(current)) return { state: current, created: false };
      }

      const incarnation = bindings.length + 1;
      const id = sessionIdForStart(key, incarnation);
      const stream = sessionStream(id);
      const started = await this.#sessions.mutate(stream, (state, at) => decideStart(state, input, at));
      const created = started.events.length > 0;
      const bound = await this.#keys.mutate(keyStream, (state, at) => decideBindStartKey(state, key, incarnation, id, at));
      const binding = bound.state.bindings[incarnation - 1];
      if (binding?.sessionId === id && !binding.released && isLive(started.state)) return { state: started.state, created };
      if (created && binding?.released) {
        // Overtaken: this incarnation already lived and ended while this start was on its way, so the
        // session just created reuses its id. Nobody was handed it; remove it before trying the next one.
        await this.#sessions.exclusive(stream, async () => {
          await this.#store.deleteStream(stream, { expectedRevision: 'any' });
          this.#sessions.forget(stream);
        });
      }
    }
    throw SessionHistoryError.conflict(messages.tooManyConflicts);
  }
}
