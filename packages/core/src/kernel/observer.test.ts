import { describe, expect, it } from 'vitest';
import { InvalidInputError } from './errors.js';
import { storeObserverOf } from './observer.js';

describe('storeObserverOf', () => {
  it('calls the hook it was given and nothing else', () => {
    const seen: unknown[] = [];
    const call = storeObserverOf({ flushed: (flush: unknown) => seen.push(flush) });
    call('flushed', { appends: 2, events: 3, bytes: 10, syncMs: 1 });
    call('appendCommitted', { stream: 's', events: 1, bytes: 1, durationMs: 1 });
    expect(seen).toEqual([{ appends: 2, events: 3, bytes: 10, syncMs: 1 }]);
  });

  it('never lets a hook throw or reject into the caller', async () => {
    const call = storeObserverOf({
      flushed: () => {
        throw new Error('observer bug');
      },
      appendCommitted: () => Promise.reject(new Error('async observer bug')),
    });
    expect(() => call('flushed', { appends: 1, events: 1, bytes: 1, syncMs: 0 })).not.toThrow();
    call('appendCommitted', { stream: 's', events: 1, bytes: 1, durationMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 0));
  });

  it('refuses an observer whose hook is not a function, naming the option', () => {
    expect(() => storeObserverOf({ flushed: 42 })).toThrow(InvalidInputError);
    expect(() => storeObserverOf('log')).toThrow(/observer/);
    expect(storeObserverOf(null)).toBeTypeOf('function');
  });
});
