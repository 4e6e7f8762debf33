import { SessionfoldError } from '@sessionfold/core/kernel';
import { describe, expect, it } from 'vitest';
import { SessionFileError, SessionFileInvalidError, SessionFileIoError, SessionIdentityMismatchError } from './index.js';

const cause = new Error('underneath');
const samples: Array<[SessionFileError, string]> = [
  [new SessionFileIoError('/runs/a.json', 'write', { cause }), 'session_file_io'],
  [new SessionFileInvalidError('/runs/a.json', 'is not JSON.', { cause }), 'session_file_invalid'],
  [new SessionIdentityMismatchError('goal', 'Ship it', 'Rewrite it'), 'session_identity_mismatch'],
];

describe('the errors of the session file', () => {
  it.each(samples.map(([error, code]) => [error.name, code, error] as const))('%s is a SessionfoldError with the code %s', (_, code, error) => {
    expect(error).toBeInstanceOf(SessionfoldError);
    expect(error).toBeInstanceOf(SessionFileError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe(code);
    expect(error.name).toBe(error.constructor.name);
  });

  it('no two of them share a code', () => {
    expect(new Set(samples.map(([error]) => error.code)).size).toBe(samples.length);
  });

  it('keep the native error as cause', () => {
    for (const [error] of samples.slice(0, 2)) expect(error.cause).toBe(cause);
  });
});
