import fc from 'fast-check';
import { describe, it } from 'vitest';
import { propertyParameters } from './calls.fixture.js';
import { equivalenceProperty } from './equivalence.fixture.js';
import { STORE_KINDS } from './subjects.js';

describe('the session service on every store', () => {
  it('answers every call of a random sequence (after starting s0 and s1) identically and leaves identical data behind', async () => {
    await fc.assert(equivalenceProperty(STORE_KINDS), propertyParameters(60));
  });
});
