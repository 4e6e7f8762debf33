import { SessionfoldError } from '@sessionfold/core/kernel';
import { describe, expect, it } from 'vitest';
import { SessionIdentityMismatchError, WAYS_OUT } from './errors.js';
import { IDENTITY_FIELDS, checkIdentity, identityFor } from './identity.js';

const saved = identityFor('review', 'Ship it', ['writer', 'critic', 'editor'], 'round-robin');

function mismatch(a: typeof saved, b: typeof saved): SessionIdentityMismatchError {
  try {
    checkIdentity(a, b);
  } catch (error) {
    expect(error).toBeInstanceOf(SessionIdentityMismatchError);
    expect(error).toBeInstanceOf(SessionfoldError);
    return error as SessionIdentityMismatchError;
  }
  throw new Error('checkIdentity accepted a different session');
}

describe('identityFor', () => {
  it('sorts participants and keeps the fields in comparison order', () => {
    expect(saved).toEqual({ gameplan: 'review', topic: 'Ship it', participants: ['critic', 'editor', 'writer'], orchestrator: 'round-robin' });
    expect(Object.keys(saved)).toEqual([...IDENTITY_FIELDS]);
  });

  it('does not reorder the caller’s list', () => {
    const roster = ['b', 'a'];
    identityFor('g', 't', roster, 'o');
    expect(roster).toEqual(['b', 'a']);
  });
});

describe('checkIdentity', () => {
  it('passes the same run however its participants were registered', () => {
    expect(() => checkIdentity(saved, identityFor('review', 'Ship it', ['editor', 'writer', 'critic'], 'round-robin'))).not.toThrow();
    expect(() => checkIdentity({ ...saved, participants: ['writer', 'editor', 'critic'] }, saved)).not.toThrow();
  });

  it('refuses a different session in both directions, naming the field, both values and the ways out', () => {
    const other = identityFor('review', 'Another topic', ['writer', 'critic', 'editor'], 'round-robin');
    const forward = mismatch(saved, other);
    expect(forward.code).toBe('session_identity_mismatch');
    expect(forward.field).toBe('topic');
    expect([forward.saved, forward.current]).toEqual(['Ship it', 'Another topic']);
    expect(forward.message).toContain('topic is "Ship it" in the file but "Another topic" for this run');
    expect(forward.message).toContain(WAYS_OUT);
    const backward = mismatch(other, saved);
    expect(backward.field).toBe('topic');
    expect([backward.saved, backward.current]).toEqual(['Another topic', 'Ship it']);
  });

  it('names the first differing field in identity order', () => {
    const everything = identityFor('other', 'other', ['x'], 'other');
    expect(mismatch(saved, everything).field).toBe('gameplan');
    expect(mismatch(saved, { ...saved, orchestrator: 'manual', participants: ['critic'] }).field).toBe('participants');
    expect(mismatch(saved, { ...saved, orchestrator: 'manual' }).field).toBe('orchestrator');
  });

  it('refuses a roster with a participant added, removed or renamed', () => {
    for (const roster of [
      ['critic', 'editor', 'writer', 'x'],
      ['critic', 'editor'],
      ['critic', 'editor', 'author'],
      ['critic', 'critic', 'editor'],
    ]) {
      const error = mismatch(saved, identityFor('review', 'Ship it', roster, 'round-robin'));
      expect(error.field).toBe('participants');
      expect(error.message).toContain(JSON.stringify(saved.participants));
    }
  });
});
