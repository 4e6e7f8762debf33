import { describe, expect, it } from 'vitest';
import type { EventStore } from '@sessionfold/core/kernel';
import { DEFAULT_MAX_EVENT_BYTES } from '@sessionfold/core/store-kit';
import { DEFAULT_CAPABILITIES, resolveCapabilities } from './capabilities.js';

describe('resolveCapabilities', () => {
  it('fills every default and has no replay settings without the environment', () => {
    const caps = resolveCapabilities({}, {});
    expect(caps).toMatchObject({ ...DEFAULT_CAPABILITIES, reopen: undefined, replay: {} });
    expect(caps.maxEventBytes).toBe(DEFAULT_MAX_EVENT_BYTES);
    expect(Object.isFrozen(caps)).toBe(true);
  });

  it('keeps what the store declares', () => {
    const reopen = async (store: EventStore) => store;
    const caps = resolveCapabilities({ reopen, maxEventBytes: 4096, numRuns: 7, maxCommands: 9, concurrentAppends: false }, {});
    expect(caps).toMatchObject({ reopen, maxEventBytes: 4096, numRuns: 7, maxCommands: 9, concurrentAppends: false });
  });

  it('keeps the follow delay and openSecond', () => {
    const openSecond = async (store: EventStore) => store;
    expect(resolveCapabilities({}, {})).toMatchObject({ followDelayMs: 100, openSecond: undefined });
    const caps = resolveCapabilities({ followDelayMs: 250, openSecond }, {});
    expect(caps).toMatchObject({ followDelayMs: 250, openSecond });
  });

  it('SESSIONFOLD_PROPERTY_RUNS overrides numRuns, and the replay variables are read', () => {
    const caps = resolveCapabilities(
      { numRuns: 7 },
      {
        SESSIONFOLD_PROPERTY_RUNS: '500',
        SESSIONFOLD_PROPERTY_SEED: '-42',
        SESSIONFOLD_PROPERTY_PATH: '3:1:0',
        SESSIONFOLD_PROPERTY_REPLAY_PATH: 'AB:C',
      },
    );
    expect(caps.numRuns).toBe(500);
    expect(caps.replay).toEqual({ seed: -42, path: '3:1:0', replayPath: 'AB:C' });
  });

  it('the older name of the replay variable is still read when the current one is not set', () => {
    expect(resolveCapabilities({}, { SESSIONFOLD_PROPERTY_REPLAY: 'AB:C' }).replay).toEqual({ replayPath: 'AB:C' });
    expect(resolveCapabilities({}, { SESSIONFOLD_PROPERTY_REPLAY: 'old', SESSIONFOLD_PROPERTY_REPLAY_PATH: 'new' }).replay).toEqual({ replayPath: 'new' });
  });

  it.each([
    [{}, { SESSIONFOLD_PROPERTY_RUNS: 'many' }, /SESSIONFOLD_PROPERTY_RUNS/],
    [{}, { SESSIONFOLD_PROPERTY_RUNS: '0' }, /SESSIONFOLD_PROPERTY_RUNS/],
    [{}, { SESSIONFOLD_PROPERTY_SEED: '1.5' }, /SESSIONFOLD_PROPERTY_SEED/],
    [{}, { SESSIONFOLD_PROPERTY_PATH: 'first' }, /SESSIONFOLD_PROPERTY_PATH/],
    [{}, { SESSIONFOLD_PROPERTY_MAX_CALLS: '-3' }, /SESSIONFOLD_PROPERTY_MAX_CALLS/],
    [{ maxEventBytes: 10 }, {}, /maxEventBytes/],
    [{ numRuns: 0 }, {}, /numRuns/],
    [{ maxCommands: 2.5 }, {}, /maxCommands/],
    [{ followDelayMs: 0 }, {}, /followDelayMs/],
  ])('refuses %j with %j', (capabilities, env, message) => {
    expect(() => resolveCapabilities(capabilities, env)).toThrow(message);
  });
});
