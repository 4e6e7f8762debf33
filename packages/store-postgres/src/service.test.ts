import { describe, expect, it } from 'vitest';
import { openSessionHistory, type SessionHistory } from '@sessionfold/core';
import type { EventStore } from '@sessionfold/core/kernel';
import { collect, openStore, schemasDroppedAfterAll } from './test-support.fixture.js';

const KEYS = ['alpha', 'beta', 'gamma', 'delta'];
const STARTED_AT = '2026-07-23T00:00:00Z';

describe('postgresStore: two session services on one database', { tags: ['postgres'] }, () => {
  const fresh = schemasDroppedAfterAll();

  it('concurrent starts, enqueues and claims across them take effect exactly once; both agree with a fresh replay', async () => {
    const schema = fresh('service');
    // Two stores, two pools: the two services share nothing but the database, as two servers would.
    const stores: EventStore[] = [(await openStore({ schema })).store, (await openStore({ schema })).store];
    const services: SessionHistory[] = await Promise.all(stores.map((store) => openSessionHistory({ store })));
    try {
      const starts = await Promise.all(
        KEYS.flatMap((key) => services.map((service) => service.start({ idempotencyId: key, startedAt: STARTED_AT, sessionType: 'conversation' }))),
      );
      const ids = [...new Set(starts.map((result) => result.value.id))];
      expect(ids).toHaveLength(KEYS.length);
      for (const id of ids) expect(starts.filter((result) => result.value.id === id && result.created)).toHaveLength(1);

      const enqueues = await Promise.all(
        ids.flatMap((id) =>
          ['m1', 'm2', 'm3'].flatMap((key) => services.map((service) => service.enqueue(id, { idempotencyId: key, kind: 'message', payload: { key } }))),
        ),
      );
      const commands = [...new Set(enqueues.map((result) => result.value.id))];
      expect(commands).toHaveLength(ids.length * 3);
      for (const command of commands) expect(enqueues.filter((result) => result.value.id === command && result.created)).toHaveLength(1);

      const claims = await Promise.all(commands.flatMap((command) => services.map((service) => service.claimCommand(command))));
      expect(claims.every((claimed) => claimed.status === 'processing')).toBe(true);

      // Each effect is one event in its session's stream, whichever service won the race to write it.
      const names = (await collect((stores[0] as EventStore).streams())).map((entry) => entry.stream);
      for (const id of ids) {
        const stream = names.find((name) => name.includes(id));
        expect(stream, `the stream of session ${id}`).toBeDefined();
        const types = (await collect((await (stores[0] as EventStore).read(stream as string)).events)).map((event) => event.type);
        expect(types.filter((type) => type === 'SessionStarted')).toHaveLength(1);
        expect(types.filter((type) => type === 'CommandEnqueued')).toHaveLength(3);
        expect(types.filter((type) => type === 'CommandClaimed')).toHaveLength(3);
      }

      const replayStore = (await openStore({ schema })).store;
      const replay = await openSessionHistory({ store: replayStore });
      try {
        const truth = { list: await replay.list(), heads: await replay.commandHeads() };
        expect(truth.heads).toHaveLength(ids.length);
        for (const service of services) expect({ list: await service.list(), heads: await service.commandHeads() }).toEqual(truth);
      } finally {
        await replay.close();
        await replayStore.close();
      }
    } finally {
      for (const service of services) await service.close();
      for (const store of stores) await store.close();
    }
  });
});
