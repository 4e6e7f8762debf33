/** One observer that calls the same hook on each of `observers` in turn: a logger and metrics side by side. */
export function fanOut<O extends object>(...observers: O[]): O {
  const hooks = new Set(observers.flatMap((observer) => Object.keys(observer)));
  const combined: Record<string, (value: unknown) => void> = {};
  for (const hook of hooks) {
    combined[hook] = (value) => {
      for (const observer of observers) (observer as Record<string, ((value: unknown) => void) | undefined>)[hook]?.(value);
    };
  }
  return combined as O;
}
