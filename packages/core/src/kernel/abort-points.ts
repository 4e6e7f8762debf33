/** How long work checking a signal may run before it lets the event loop turn. */
const TURN_MS = 10;
/** Steps between looks at the clock. */
const STEPS_PER_LOOK = 256;

/**
 * A check for long loops over events: throws the signal's reason once it fired and, every `TURN_MS` of steps,
 * returns a promise that lets the event loop turn first. A store whose reads are answered at once (SQLite,
 * memory) would otherwise keep the loop busy to the end, and a signal fired by a timer would never be seen.
 * Without a signal it does nothing.
 */
export function abortPoints(signal: AbortSignal | undefined): () => Promise<void> | undefined {
  if (signal === undefined) return () => undefined;
  let steps = 0;
  let since = performance.now();
  return () => {
    signal.throwIfAborted();
    if (++steps % STEPS_PER_LOOK !== 0 || performance.now() - since < TURN_MS) return undefined;
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      since = performance.now();
      signal.throwIfAborted();
    });
  };
}
