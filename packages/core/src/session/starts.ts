import type { StreamId } from '../kernel/port.js';
import { decideBindStartKey, decideReleaseStartKey, decideStart } from './decisions.js';
import { SessionHistoryError, messages } from './errors.js';
import type { SessionEvent, StartKeyEvent } from './events.js';
import { legacySessionIdForStart, sessionIdForStart, sessionStream, startKeyStream } from './ids.js';
import type { StartSession } from './inputs.js';
import type { SessionStreamState, StartKeyBinding, StartKeyState } from './model.js';
import { carriedStartKey } from './start-key-index.js';
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
 * key starts at incarnation 1 after it. Before making an incarnation, a start looks for a live session whose
 * latest control state carries the key (`startIdempotencyId`) though no start made it — registered or
 * checkpointed with it — and returns that one instead, bound as the key's next incarnation, so the id that
 * incarnation would have had is never made (nor is any id used twice).
 */
export class SessionStarts {
  readonly #sessions: StreamWriter<SessionStreamState, SessionEvent>;
  readonly #keys: StreamWriter<StartKeyState, StartKeyEvent>;
  readonly #rounds: number;
  readonly #carrying: (key: string) => Promise<StreamId[]>;

  /** `carrying(key)` lists the live session streams whose latest control state carries `key`, as of now. */
  constructor(
    writers: { sessions: StreamWriter<SessionStreamState, SessionEvent>; keys: StreamWriter<StartKeyState, StartKeyEvent> },
    rounds: number,
    carrying: (key: string) => Promise<StreamId[]> = async () => [],
  ) {
    this.#sessions = writers.sessions;
    this.#keys = writers.keys;
    this.#rounds = rounds;
    this.#carrying = carrying;
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
      const carrier = await this.#carrier(key, stream, bindings);
      if (carrier !== undefined) {
        if (carrier.bound) return { state: carrier.state, created: false };
        // Bound as the key's next incarnation, so no start makes that incarnation's own id: the next round finds it.
        await this.#keys.mutate(keyStream, (state, at) => decideBindStartKey(state, key, incarnation, carrier.state.sessionId, at));
        continue;
      }
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

  /**
   * A live session, other than the key's next incarnation `next`, whose latest control state carries `key` (one
   * registered with it, say), and whether the key stream binds it already; undefined when there is none, or when
   * `next` itself is one (the start then finds it as usual).
   */
  async #carrier(key: string, next: StreamId, bindings: readonly StartKeyBinding[]): Promise<{ state: SessionStreamState; bound: boolean } | undefined> {
    const streams = await this.#carrying(key);
    if (streams.includes(next)) return undefined;
    for (const stream of streams) {
      // The cross-session view may lag a write made since: the stream as stored decides.
      const { state } = await this.#sessions.load(stream);
      // A session whose life under this key has ended is not taken back (a completed id registered again, say).
      if (carriedStartKey(state) !== key || bindings.some((binding) => binding.sessionId === state.sessionId && binding.released)) continue;
      return { state, bound: bindings.some((binding) => binding.sessionId === state.sessionId && !binding.released) };
    }
    return undefined;
  }
}
