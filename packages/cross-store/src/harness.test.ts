import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DELETED_RECORD, memoryStore, type EventStore, type RecordedEvent } from '@sessionfold/core';
import { describeCall } from './calls.js';
import { equivalenceProperty } from './equivalence.fixture.js';
import { completionState } from './runner.js';
import { memoryKind, type StoreKind } from './subjects.js';

/** A memory store whose change feed leaves out deletions: a reader never learns that a stream is gone. */
const forgetsDeletions: StoreKind = {
  name: 'forgets-deletions',
  subject: () => ({
    name: 'forgets-deletions',
    durable: false,
    open: async (): Promise<EventStore> => {
      const inner = memoryStore();
      async function* withoutDeletions(records: AsyncIterable<RecordedEvent>) {
        for await (const record of records) if (record.type !== DELETED_RECORD) yield record;
      }
      return { ...inner, readAll: (options) => withoutDeletions(inner.readAll(options)) };
    },
    reopen: async (store) => store,
    dispose: async (store) => {
      await store?.close();
    },
  }),
};

/** A memory store that reads a compacted stream without its snapshot: the change feed is right, the folds are not. */
const losesSnapshots: StoreKind = {
  name: 'loses-snapshots',
  subject: () => ({
    name: 'loses-snapshots',
    durable: false,
    open: async (): Promise<EventStore> => {
      const inner = memoryStore();
      return {
        ...inner,
        read: async (stream, options) => {
          const { snapshot: _snapshot, ...read } = await inner.read(stream, options);
          return read;
        },
      };
    },
    reopen: async (store) => store,
    dispose: async (store) => {
      await store?.close();
    },
  }),
};

describe('the equivalence harness', () => {
  it('finds a store whose change feed leaves out deletions, and shrinks to a short readable sequence', async () => {
    const result = await fc.check(equivalenceProperty([memoryKind, forgetsDeletions], 30), { numRuns: 300, seed: 42 });
    expect(result.failed).toBe(true);
    const counterexample = result.counterexample?.[0];
    const printed = fc.stringify(counterexample);
    expect(printed).toMatch(/complete|recordCompletion/);
    expect([...(counterexample ?? [])].length).toBeLessThanOrEqual(4);
    expect(String(result.errorInstance)).toContain('forgets-deletions differs from memory');
  });

  it('finds a store whose change feed is right but whose sessions fold wrongly, through the service answers', async () => {
    const result = await fc.check(equivalenceProperty([memoryKind, losesSnapshots], 30), { numRuns: 300, seed: 42 });
    expect(result.failed).toBe(true);
    expect(fc.stringify(result.counterexample?.[0])).toMatch(/compact/);
    expect(String(result.errorInstance)).toContain('loses-snapshots differs from memory');
    expect(String(result.errorInstance)).not.toContain('the changes it committed');
  });

  it('describes calls as short scripts', () => {
    expect(describeCall({ op: 'checkpoint', session: 1, skew: -1, state: { pendingTurn: true }, userActivity: true })).toBe(
      'checkpoint(s1, v-1, {"pendingTurn":true}, userActivity)',
    );
    expect(describeCall({ op: 'claimCommand', session: 0, command: 'head' })).toBe('claimCommand(s0/head)');
    expect(completionState('obj-A', true)).toEqual({
      sessionType: 'conversation',
      historyIngress: { sessionObjectId: 'obj-A', commitReceipt: { sessionObjectId: 'obj-A', transactionId: 'tx-obj-A' } },
    });
  });
});
