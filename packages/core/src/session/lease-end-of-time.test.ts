import { describe, expect, it } from 'vitest';
import { memoryStore } from '../kernel/index.js';
import { openSessionHistory } from './service.js';
import { startConversation } from './test-support.fixture.js';

// The latest time a Date holds, and a clock a few seconds before it.
const END_OF_TIME = 8.64e15;

describe('a lease claimed at the end of time', () => {
  it('is refused as invalid_request naming leaseMs when it would end after the latest date, and changes nothing', async () => {
    let now = END_OF_TIME - 10_000;
    const store = memoryStore({ clock: () => new Date('2026-07-23T00:00:00.000Z') });
    const history = await openSessionHistory({ store, clock: () => new Date(now) });
    const { id } = await startConversation(history, 'end-of-time');
    const command = (await history.enqueue(id, { idempotencyId: 'job-1', kind: 'job' })).value;
    const refused = await history.claimCommand(command.id, { worker: 'w1', leaseMs: 10_001 }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'invalid_request', field: 'leaseMs' });
    expect((refused as Error).message).toContain('leaseMs');
    expect((await history.commandHeads())[0]).toMatchObject({ status: 'pending' });
    // A lease ending exactly at the latest date is still one that can be recorded.
    expect(await history.claimCommand(command.id, { worker: 'w1', leaseMs: 10_000 })).toMatchObject({
      worker: 'w1',
      leaseUntil: new Date(END_OF_TIME).toISOString(),
    });
    now = END_OF_TIME;
    await expect(history.claimCommand(command.id, { worker: 'w1', leaseMs: 1 })).rejects.toMatchObject({ code: 'invalid_request' });
  });
});
