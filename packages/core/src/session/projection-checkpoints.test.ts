import { describe, expect, it } from 'vitest';
import { memoryStore, type CompleteEventStore, type EventStore } from '../kernel/index.js';
import type { SessionHistoryObserver } from './observer.js';
import { PROJECTION_CHECKPOINT_NAME } from './projection-image.js';
import type { SessionHistory, SessionHistoryOptions } from './service.js';
import { openTestHistory, startConversation } from './test-support.fixture.js';

type Calls = [string, Record<string, unknown>][];

/** An observer recording the checkpoint and catch-up hooks as [hook, argument]. */
function recording(): { observer: SessionHistoryObserver; calls: Calls } {
  const calls: Calls = [];
  const record = (hook: string) => (value: object) => void calls.push([hook, value as Record<string, unknown>]);
  return {
    calls,
    observer: {
      projectionCaughtUp: record('projectionCaughtUp'),
      checkpointLoaded: record('checkpointLoaded'),
      checkpointIgnored: record('checkpointIgnored'),
      checkpointSaved: record('checkpointSaved'),
    },
  };
}

const of = (calls: Calls, hook: string) => calls.filter(([name]) => name === hook).map(([, value]) => value);

/** Changes the catch-ups applied (the open's included). */
const changesRead = (calls: Calls) => of(calls, 'projectionCaughtUp').reduce((sum, caughtUp) => sum + (caughtUp.changes as number), 0);

/** Sessions with commands in every state, one completed, one stopped: what the answers below compare. */
async function fill(history: SessionHistory, tag: string, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const session = await startConversation(history, `${tag}-${index}`);
    const first = await history.enqueue(session.id, { idempotencyId: `${tag}-${index}-a`, kind: 'message' });
    await history.enqueue(session.id, { idempotencyId: `${tag}-${index}-b`, kind: 'message' });
    if (index % 3 === 1) await history.claimCommand(first.value.id, { worker: 'w', leaseMs: 60_000 });
    if (index % 3 === 2) await history.completeCommand((await history.claimCommand(first.value.id)).id, { outcome: { ok: true } });
    if (index % 4 === 3) await history.stop(session.id);
    if (index % 5 === 4)
      await history.complete(session.id, { expectedVersion: (await history.get(session.id)).version, state: { sessionObjectId: `${tag}-object-${index}` } });
  }
}

/** A call's result, or its error's code. */
async function settled<T>(call: Promise<T>): Promise<T | { error: string }> {
  try {
    return await call;
  } catch (error) {
    return { error: (error as { code: string }).code };
  }
}

/**
 * Every answer the projection gives, and the idempotent calls it backs (starts and enqueues repeated, claims
 * renewed) reduced to what does not depend on the time they were made: nothing here creates anything, so two
 * services on one store can be compared one after the other.
 */
async function answers(history: SessionHistory) {
  const list = await history.list();
  const heads = await history.commandHeads();
  const records = await Promise.all(list.map((record) => settled(history.get(record.id))));
  const restarts = [];
  for (const record of records) {
    const key = 'error' in record ? undefined : record.state['startIdempotencyId'];
    if (typeof key !== 'string' || ('error' in record ? true : record.phase === 'complete')) continue;
    const again = await settled(history.start({ idempotencyId: key, startedAt: '2026-07-23T00:00:00Z', sessionType: 'conversation' }));
    restarts.push('error' in again ? again : [again.value.id, again.created]);
  }
  const repeated = [];
  for (const head of heads) {
    const enqueued = await settled(history.enqueue(head.sessionId, { idempotencyId: head.idempotencyId, kind: 'message' }));
    repeated.push('error' in enqueued ? enqueued : [enqueued.value.id, enqueued.created]);
    if (head.worker === undefined) continue;
    const claimed = await settled(history.claimCommand(head.id, { worker: head.worker, leaseMs: 60_000 }));
    repeated.push('error' in claimed ? claimed : [claimed.id, claimed.worker, claimed.status]);
  }
  return { list, heads, records, restarts, repeated };
}

/** The answers of two services on one store, the second asked after the first. */
async function bothAnswers(one: SessionHistory, other: SessionHistory) {
  const reads = async (history: SessionHistory) => {
    const list = await history.list();
    return { list, heads: await history.commandHeads(), records: await Promise.all(list.map((record) => settled(history.get(record.id)))) };
  };
  const before = [await reads(one), await reads(other)];
  const calls = [await answers(one), await answers(other)];
  return [
    { ...before[0], calls: { restarts: calls[0]?.restarts, repeated: calls[0]?.repeated } },
    { ...before[1], calls: { restarts: calls[1]?.restarts, repeated: calls[1]?.repeated } },
  ];
}

async function open(store: EventStore, options: Partial<SessionHistoryOptions> = {}) {
  const { observer, calls } = recording();
  const { history } = await openTestHistory({ store, observer, compaction: false, completion: 'archive-and-delete', ...options });
  return { history, calls };
}

describe('projection checkpoints', () => {
  it('a reopened service starts from the checkpoint saved at close and reads only the feed written after it', async () => {
    const store = memoryStore();
    const first = await open(store);
    await fill(first.history, 'early', 6);
    await first.history.close();
    const saved = of(first.calls, 'checkpointSaved');
    expect(saved).toHaveLength(1);
    expect(saved[0]).not.toHaveProperty('error');

    // Another service writes after the checkpoint.
    const writer = await open(store, { checkpoints: false });
    await fill(writer.history, 'late', 2);
    await writer.history.close();

    const reopened = await open(store);
    expect(of(reopened.calls, 'checkpointLoaded')).toEqual([expect.objectContaining({ position: saved[0]?.position, sessions: 5 })]);
    const rebuilt = await open(store, { checkpoints: false });
    expect(changesRead(reopened.calls)).toBeLessThan(changesRead(rebuilt.calls));
    const feedAfter = (await feedPositions(store)).filter((position) => position > (saved[0]?.position as number)).length;
    expect(changesRead(reopened.calls)).toBe(feedAfter);
    const [fromCheckpoint, fromFeed] = await bothAnswers(reopened.history, rebuilt.history);
    expect(fromCheckpoint).toEqual(fromFeed);
  });

  it('saves in the background once enough changes are applied, and a read-only service never saves', async () => {
    const store = memoryStore();
    const { history, calls } = await open(store, { checkpoints: { everyChanges: 20 } });
    await fill(history, 'busy', 8);
    await history.list();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(of(calls, 'checkpointSaved').length).toBeGreaterThan(0);
    await history.close();

    const before = await store.checkpoints.load(PROJECTION_CHECKPOINT_NAME);
    const writer = await open(store, { checkpoints: false });
    await fill(writer.history, 'more', 2);
    const reader = await open(store, { readOnly: true, checkpoints: { everyChanges: 1 } });
    expect(of(reader.calls, 'checkpointLoaded')).toHaveLength(1);
    await reader.history.list();
    await reader.history.close();
    expect(of(reader.calls, 'checkpointSaved')).toEqual([]);
    expect(await store.checkpoints.load(PROJECTION_CHECKPOINT_NAME)).toEqual(before);
  });

  it('with more sessions than half of everyChanges, saves twice as many changes apart as there are sessions', async () => {
    const store = memoryStore();
    // Without the follow, each catch-up below applies exactly the change before it.
    const { history, calls } = await open(store, { checkpoints: { everyChanges: 1 }, follow: false });
    const sessions = await Promise.all(Array.from({ length: 10 }, (_, index) => startConversation(history, `spaced-${index}`)));
    await history.health();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const before = of(calls, 'checkpointSaved').length;
    for (let line = 0; line < 100; line++) {
      await history.appendTranscript((sessions[line % sessions.length] as { id: string }).id, { role: 'user-message', text: `line ${line}` });
      await history.health();
      // Each save runs to its end before the next change, so only the rule decides when the next one starts.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const positions = of(calls, 'checkpointSaved')
      .slice(before)
      .map((save) => save.position as number);
    await history.close();
    // 100 changes with 10 sessions: a save every 20 changes, not every change (everyChanges) nor every 10 (one per session).
    expect(positions.length).toBeGreaterThanOrEqual(4);
    expect(positions.length).toBeLessThanOrEqual(6);
    for (let index = 1; index < positions.length; index++) expect((positions[index] as number) - (positions[index - 1] as number)).toBeGreaterThanOrEqual(20);
  });

  it('a failing save is reported and fails no call', async () => {
    const inner = memoryStore();
    const slot = inner.checkpoints;
    if (!slot) throw new Error('the memory store has a checkpoint slot');
    const store: EventStore = {
      ...inner,
      checkpoints: { storeId: () => slot.storeId(), load: (name) => slot.load(name), save: async () => Promise.reject(new Error('disk full')) },
    };
    const { history, calls } = await open(store, { checkpoints: { everyChanges: 1 } });
    await fill(history, 'failing', 3);
    await history.close();
    const saved = of(calls, 'checkpointSaved');
    expect(saved.length).toBeGreaterThan(0);
    expect(saved.every((save) => (save.error as { code?: string } | undefined)?.code === 'internal_error')).toBe(true);
  });

  describe('a checkpoint that cannot be trusted is ignored and the projection rebuilt, with the same answers', () => {
    /** A store with sessions and a checkpoint saved at close; `tamper` then changes the checkpoint or the store. */
    async function refused(tamper: (store: CompleteEventStore, text: string) => Promise<EventStore>): Promise<{ reasons: unknown[]; same: boolean }> {
      const store = memoryStore({ storeId: 'original' });
      const first = await open(store);
      await fill(first.history, 'kept', 6);
      await first.history.close();
      const text = Buffer.from((await store.checkpoints.load(PROJECTION_CHECKPOINT_NAME)) as Uint8Array).toString('utf8');
      const target = await tamper(store, text);
      const reopened = await open(target);
      const rebuilt = await open(target, { checkpoints: false });
      const [fromCheckpoint, fromFeed] = await bothAnswers(reopened.history, rebuilt.history);
      const same = JSON.stringify(fromCheckpoint) === JSON.stringify(fromFeed);
      expect(of(reopened.calls, 'checkpointLoaded')).toEqual([]);
      return { reasons: of(reopened.calls, 'checkpointIgnored').map((ignored) => ignored.reason), same };
    }

    it('missing', async () => {
      expect(await refused(async () => memoryStore())).toEqual({ reasons: ['missing'], same: true });
    });

    it('damaged: a byte of the body changed, or the text cut short', async () => {
      const flip = async (store: CompleteEventStore, text: string) => {
        await store.checkpoints.save(PROJECTION_CHECKPOINT_NAME, text.replace('"phase":"active"', '"phase":"activf"'));
        return store;
      };
      expect(await refused(flip)).toEqual({ reasons: ['damaged'], same: true });
      const cut = async (store: CompleteEventStore, text: string) => {
        await store.checkpoints.save(PROJECTION_CHECKPOINT_NAME, text.slice(0, text.length - 10));
        return store;
      };
      expect(await refused(cut)).toEqual({ reasons: ['damaged'], same: true });
    });

    it('wrong-shaped with a matching checksum: damaged, never a crash later', async () => {
      const { createHash } = await import('node:crypto');
      const forge = async (store: CompleteEventStore, text: string) => {
        const end = text.indexOf('\n');
        const header = JSON.parse(text.slice(0, end)) as Record<string, unknown>;
        const body = text.slice(end + 1).replace(/"commands":\[\{"id":"[^"]*"/, '"commands":[{"id":7');
        header['sha256'] = createHash('sha256').update(body).digest('hex');
        await store.checkpoints.save(PROJECTION_CHECKPOINT_NAME, `${JSON.stringify(header)}\n${body}`);
        return store;
      };
      expect(await refused(forge)).toEqual({ reasons: ['damaged'], same: true });
    });

    it('of another version', async () => {
      const old = async (store: CompleteEventStore, text: string) => {
        await store.checkpoints.save(PROJECTION_CHECKPOINT_NAME, text.replace('"version":1,', '"version":0,'));
        return store;
      };
      expect(await refused(old)).toEqual({ reasons: ['version'], same: true });
    });

    it('from another store (the copy of a store keeps its events, not its checkpoint)', async () => {
      const copied = async (store: CompleteEventStore, text: string) => {
        const copy = memoryStore({ storeId: 'copy' });
        const { copyStore } = await import('../kernel/index.js');
        await copyStore(store, copy);
        await copy.checkpoints.save(PROJECTION_CHECKPOINT_NAME, text);
        return copy;
      };
      expect(await refused(copied)).toEqual({ reasons: ['store'], same: true });
    });

    it('ahead of the feed (a store restored from an older copy)', async () => {
      const older = async (store: CompleteEventStore, text: string) => {
        // The same store id, but only the first sessions' history.
        const restored = memoryStore({ storeId: 'original' });
        const early = await open(restored, { checkpoints: false });
        await fill(early.history, 'kept', 2);
        await early.history.close();
        await restored.checkpoints.save(PROJECTION_CHECKPOINT_NAME, text);
        void store;
        return restored;
      };
      const result = await refused(older);
      expect(result.reasons).toEqual(['beyond_feed']);
    });

    it('of another history that reached the same position', async () => {
      const other = async (store: CompleteEventStore, text: string) => {
        const twin = memoryStore({ storeId: 'original' });
        const writer = await open(twin, { checkpoints: false });
        await fill(writer.history, 'other', 6);
        await writer.history.close();
        // Pads the twin's feed to the checkpoint's position with records of a stream the projection ignores.
        const target = (await feedPositions(store)).at(-1) as number;
        for (let position = (await feedPositions(twin)).at(-1) as number; position < target; position++) {
          await twin.append('padding', [{ type: 'Padding', data: null }], { expectedRevision: 'any' });
        }
        await twin.checkpoints.save(PROJECTION_CHECKPOINT_NAME, text);
        return twin;
      };
      const result = await refused(other);
      expect(result.reasons).toEqual(['other_history']);
    });
  });
});

async function feedPositions(store: EventStore): Promise<number[]> {
  const positions: number[] = [];
  for await (const record of store.readAll()) positions.push(record.position);
  return positions;
}

describe('closing the service', () => {
  it('stops a catch-up in flight between two records: close does not wait for the rest of the feed, the query gets the closed error', async () => {
    const inner = memoryStore();
    const writer = await open(inner, { checkpoints: false });
    await fill(writer.history, 'long', 10);
    await writer.history.close();
    const total = (await feedPositions(inner)).length;

    let yielded = 0;
    let slow = false;
    const store: EventStore = {
      ...inner,
      readAll: (options) =>
        (async function* () {
          for await (const record of inner.readAll(options)) {
            // Once slowed, each record takes a turn of the event loop: a long feed, read while close() runs.
            if (slow) await new Promise((resolve) => setImmediate(resolve));
            yielded++;
            yield record;
          }
        })(),
    };
    const reader = await open(store, { checkpoints: false, follow: false });
    // Another writer moves the feed on; the next query has all of it to read again from a projection at 0.
    const more = await open(inner, { checkpoints: false });
    await fill(more.history, 'more', 10);
    await more.history.close();
    slow = true;
    yielded = 0;
    const listing = reader.history.list();
    await new Promise((resolve) => setImmediate(resolve));
    await reader.history.close();
    await expect(listing).rejects.toMatchObject({ code: 'invalid_request', message: 'Session History is closed.' });
    expect(yielded).toBeLessThan((await feedPositions(inner)).length - total);
  });
});
