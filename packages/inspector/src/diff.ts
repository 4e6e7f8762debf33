/** One change between two JSON values: the path to it, and the value before and after (absent: not there). */
export interface DiffEntry {
  path: string;
  before?: unknown;
  after?: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The leaves that differ between `before` and `after`, by path (`state.transcript[2].content`), in document order. */
export function jsonDiff(before: unknown, after: unknown, path = ''): DiffEntry[] {
  if (Object.is(before, after)) return [];
  if (Array.isArray(before) && Array.isArray(after)) {
    const changes: DiffEntry[] = [];
    for (let index = 0; index < Math.max(before.length, after.length); index++) {
      const at = `${path}[${index}]`;
      if (index >= before.length) changes.push({ path: at, after: after[index] });
      else if (index >= after.length) changes.push({ path: at, before: before[index] });
      else changes.push(...jsonDiff(before[index], after[index], at));
    }
    return changes;
  }
  if (isObject(before) && isObject(after)) {
    const changes: DiffEntry[] = [];
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    for (const key of keys) {
      const at = path === '' ? key : `${path}.${key}`;
      if (!Object.hasOwn(after, key)) changes.push({ path: at, before: before[key] });
      else if (!Object.hasOwn(before, key)) changes.push({ path: at, after: after[key] });
      else changes.push(...jsonDiff(before[key], after[key], at));
    }
    return changes;
  }
  return [{ path: path === '' ? '(record)' : path, before, after }];
}
