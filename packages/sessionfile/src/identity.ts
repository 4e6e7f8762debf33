import { SessionIdentityMismatchError } from './errors.js';
import type { SessionIdentity } from './records.js';

/** The identity fields in the order they are compared and reported. */
export const IDENTITY_FIELDS = ['gameplan', 'topic', 'participants', 'orchestrator'] as const;

/** The identity block for a run; participants are sorted, since registration order does not make a different session. */
export function identityFor(gameplan: string, topic: string, participants: readonly string[], orchestrator: string): SessionIdentity {
  return { gameplan, topic, participants: [...participants].sort(compareCodeUnits), orchestrator };
}

/**
 * Refuses to resume `saved` into a run whose identity is `current`: throws `SessionIdentityMismatchError`
 * naming the first differing field (in `IDENTITY_FIELDS` order) and both values.
 */
export function checkIdentity(saved: SessionIdentity, current: SessionIdentity): void {
  for (const field of IDENTITY_FIELDS) {
    const a = saved[field];
    const b = current[field];
    const same = Array.isArray(a) && Array.isArray(b) ? sameMembers(a, b) : a === b;
    if (!same) throw new SessionIdentityMismatchError(field, a, b);
  }
}

function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const x = [...a].sort(compareCodeUnits);
  const y = [...b].sort(compareCodeUnits);
  return x.every((item, i) => item === y[i]);
}

/** Plain code-unit order, the same on every machine and locale. */
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
