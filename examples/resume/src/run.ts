import { createHash } from 'node:crypto';
import { checkIdentity, identityFor, loadSnapshot, newSnapshot, type SessionSnapshot, saveSnapshot } from '@sessionfold/sessionfile';

/** What one run is: its topic and length; the identity saved in the file is made from it. */
export interface RunOptions {
  /** The session file: read on start when it exists, rewritten after every step. */
  file: string;
  topic: string;
  steps: number;
  /** How long one step takes (it stands for a model call); 0 in a hurry. */
  stepMs?: number;
}

/** The run's own state, kept in the file's `loop.runtime`: the step it reached and what the steps added up to. */
export interface RunState {
  step: number;
  total: number;
  digest: string;
}

const PARTICIPANTS = ['writer', 'critic'] as const;

/**
 * Runs `steps` steps of a writer/critic round-robin, saving the session file after each one. When the file
 * exists it is checked to be this run's (same topic and participants) and the run goes on from the step it
 * holds; a file of another run is refused with `SessionIdentityMismatchError` before anything is changed.
 */
export async function run(options: RunOptions, print: (line: string) => void = console.log): Promise<RunState> {
  const identity = identityFor('review', options.topic, PARTICIPANTS, 'round-robin');
  const saved = await loadSnapshot(options.file);
  if (saved) checkIdentity(saved.identity, identity);
  let snapshot = saved ?? newSnapshot(identity);
  let state = saved ? stateOf(saved) : { step: 0, total: 0, digest: '' };
  print(
    saved
      ? `resuming ${options.file} after step ${state.step} of ${options.steps}`
      : `new run "${options.topic}": ${options.steps} steps, saved to ${options.file}`,
  );

  while (state.step < options.steps) {
    if (options.stepMs) await new Promise((resolve) => setTimeout(resolve, options.stepMs));
    const step = state.step + 1;
    const speaker = PARTICIPANTS[(step - 1) % PARTICIPANTS.length] as string;
    const input = snapshot.turns.at(-1)?.output ?? options.topic;
    const output = `${speaker} draft ${step}`;
    state = { step, total: state.total + step * step, digest: sha256(`${state.digest}${output}`).slice(0, 16) };
    snapshot = {
      ...snapshot,
      turns: [...snapshot.turns, { speaker, input, output, tool_calls: [], usage: null }],
      transcript: [...snapshot.transcript, { type: 'assistant-message', speaker, text: output }],
      loop: { turn_count: step, phase: 'drafting', runtime: { ...state } },
    };
    // The step counts once it is in the file: a kill from here on resumes after it, never in the middle of it.
    await saveSnapshot(options.file, snapshot);
    print(`step ${step}/${options.steps}: ${speaker}, total ${state.total}, digest ${state.digest}`);
  }
  print(`done: ${state.step} steps, total ${state.total}, digest ${state.digest}`);
  return state;
}

/** The run's state as the file holds it; the session file leaves `runtime` to its owner to check. */
function stateOf(snapshot: SessionSnapshot): RunState {
  const runtime = snapshot.loop.runtime ?? {};
  const { step, total, digest } = runtime as Partial<Record<keyof RunState, unknown>>;
  if (typeof step !== 'number' || typeof total !== 'number' || typeof digest !== 'string' || step !== snapshot.turns.length) {
    throw new Error(`the session file's loop.runtime is not a state of this run: ${JSON.stringify(runtime)}`);
  }
  return { step, total, digest };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
