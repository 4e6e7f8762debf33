import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { EventStore, RecordedEvent } from '@sessionfold/core/kernel';
import { PG_URL, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

/**
 * A writer in another process, held mid-transaction: it runs what the store's append runs (the same SQL
 * function), inside a transaction this test ends when it chooses.
 */
class OpenTransaction {
  readonly #client: pg.Client;
  readonly #schema: string;
  #appended: Promise<unknown> | undefined;

  private constructor(client: pg.Client, schema: string) {
    this.#client = client;
    this.#schema = schema;
  }

  static async begin(schema: string): Promise<OpenTransaction> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query('BEGIN');
    return new OpenTransaction(client, schema);
  }

  /** Sends the append; it may wait for another writer's transaction to end, so callers await it only when it cannot. */
  append(stream: string, count: number): Promise<unknown> {
    const types = Array.from({ length: count }, (_, i) => `Raw${i}`);
    this.#appended = this.#client.query(`SELECT * FROM "${this.#schema}".append_batches($1, $2, $3, $4, $5, $6, $7, $8)`, [
      [stream],
      [-1],
      [count],
      types,
      types.map((_, i) => JSON.stringify({ i })),
      types.map(() => null),
      types.map(() => 1),
      new Date().toISOString(),
    ]);
    return this.#appended;
  }

  /** Commits or rolls back, once the append got through, and disconnects. */
  async end(commit: boolean): Promise<void> {
    await this.#appended;
    await this.#client.query(commit ? 'COMMIT' : 'ROLLBACK');
    await this.#client.end();
  }
}

/** Reads the feed from where it stopped, as a projection catching up before each query would. */
class Consumer {
  readonly seen: RecordedEvent[] = [];
  async catchUp(store: EventStore): Promise<void> {
    const from = (this.seen.at(-1)?.position ?? 0) + 1;
    for await (const record of store.readAll({ fromPosition: from })) this.seen.push(record);
  }
}

const summary = (records: readonly RecordedEvent[]) => records.map((r) => `${r.position}:${r.streamId}@${r.revision}`);
/** Lets the event loop and the server move (a blocked statement stays blocked; a free one gets through). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

describe('postgresStore: the feed and transactions that commit out of order', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it.each([true, false])('a consumer sees nothing past an open append until it ends (commit: %s), then everything in order', async (commit) => {
    const { store, schema } = await openStore({ schema: fresh('late') });
    try {
      await store.append('before', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
      const consumer = new Consumer();
      await consumer.catchUp(store);
      const t1 = await OpenTransaction.begin(schema);
      // Nothing holds t1 back; once its append returned it holds the feed's counter, so t2 must wait for it
      // (a fixed wait here let t2 through first on a loaded machine).
      await t1.append('t1', 2);
      const t2 = store.append('t2', [{ type: 'B', data: 2 }], { expectedRevision: 'no_stream' });
      await settle();
      await consumer.catchUp(store);
      expect(summary(consumer.seen)).toEqual(['1:before@1']);
      await t1.end(commit);
      const t2Result = await t2;
      await consumer.catchUp(store);
      expect(summary(consumer.seen)).toEqual(commit ? ['1:before@1', '2:t1@1', '3:t1@2', '4:t2@1'] : ['1:before@1', '2:t2@1']);
      expect(t2Result.position).toBe(commit ? 4 : 2);
    } finally {
      await store.close();
    }
  });

  type Step =
    | { kind: 'begin'; tx: number; stream: number; count: number }
    | { kind: 'end'; tx: number; commit: boolean }
    | { kind: 'store'; stream: number }
    | { kind: 'read' };

  /** A random interleaving: three raw writers, store appends and consumer reads; each raw writer begins before it ends. */
  const interleaving = fc
    .tuple(
      fc.array(fc.constantFrom<'store' | 'read'>('store', 'read'), { minLength: 2, maxLength: 6 }),
      fc.array(fc.record({ stream: fc.nat(2), count: fc.integer({ min: 1, max: 3 }), commit: fc.boolean() }), { minLength: 1, maxLength: 3 }),
      fc.infiniteStream(fc.nat()),
    )
    .map(([others, txs, randomness]) => {
      const steps: Step[] = others.map((kind, i) => (kind === 'store' ? { kind, stream: i % 3 } : { kind }));
      const random = randomness[Symbol.iterator]();
      const insertAt = (step: Step, from: number) => {
        const at = from + ((random.next().value as number) % (steps.length - from + 1));
        steps.splice(at, 0, step);
        return at;
      };
      txs.forEach((tx, index) => {
        const begun = insertAt({ kind: 'begin', tx: index, stream: tx.stream, count: tx.count }, 0);
        insertAt({ kind: 'end', tx: index, commit: tx.commit }, begun + 1);
      });
      steps.push({ kind: 'read' });
      return steps;
    });

  it('32 random interleavings: the consumer never skips or repeats a record, and ends with the whole feed', async () => {
    await fc.assert(
      fc.asyncProperty(interleaving, async (steps) => {
        const { store, schema } = await openStore({ schema: fresh('mix') });
        const open = new Map<number, OpenTransaction>();
        const pending: Array<Promise<unknown>> = [];
        const consumer = new Consumer();
        try {
          for (const step of steps) {
            if (step.kind === 'begin') {
              const tx = await OpenTransaction.begin(schema);
              void tx.append(`s${step.stream}`, step.count);
              open.set(step.tx, tx);
            } else if (step.kind === 'end') {
              // Not awaited: this transaction's append may still wait for another one's to end.
              pending.push((open.get(step.tx) as OpenTransaction).end(step.commit));
            } else if (step.kind === 'store') {
              pending.push(store.append(`s${step.stream}`, [{ type: 'Store', data: step.stream }], { expectedRevision: 'any' }));
            } else {
              await consumer.catchUp(store);
            }
            await settle();
            const positions = consumer.seen.map((r) => r.position);
            expect(new Set(positions).size).toBe(positions.length);
            expect([...positions].sort((a, b) => a - b)).toEqual(positions);
          }
          await Promise.all(pending);
          await consumer.catchUp(store);
          const feed: RecordedEvent[] = [];
          for await (const record of store.readAll()) feed.push(record);
          expect(summary(consumer.seen)).toEqual(summary(feed));
          // Rolled-back writers leave no gap: the feed's positions are 1..n.
          expect(feed.map((r) => r.position)).toEqual(feed.map((_, i) => i + 1));
        } finally {
          await store.close();
        }
      }),
      { numRuns: 32 },
    );
  });
});
