import { z } from 'zod';
import { expect, test } from 'vitest';
import { memoryStore, openSessionHistory } from '../index.js';

test('a zod schema as validateData types data and the view, checks writes naming the field, and the completed session stays readable until deleted', async () => {
  const schema = z.object({ memory: z.array(z.string()), startedAt: z.string().optional() });
  const history = await openSessionHistory({ store: memoryStore(), validateData: schema });
  const { value } = await history.start({ idempotencyId: 'k', startedAt: new Date().toISOString(), sessionType: 'chat', data: { memory: [] } });
  const memory: string[] | undefined = value.data?.memory;
  expect(memory).toEqual([]);
  const next = await history.checkpoint(value.id, { expectedVersion: value.version, data: (current) => ({ memory: [...(current?.memory ?? []), 'x'] }) });
  expect(next.data?.memory).toEqual(['x']);
  await expect(history.checkpoint(value.id, { expectedVersion: next.version, data: { memory: [1] as unknown as string[] } })).rejects.toMatchObject({
    code: 'invalid_request',
    field: 'data.memory.0',
  });
  await expect(history.checkpoint(value.id, { expectedVersion: next.version, state: { myKey: 1 } })).rejects.toMatchObject({
    code: 'invalid_request',
    field: 'state.myKey',
  });
  await history.appendTranscript(value.id, { role: 'user-message', text: 'hi' });
  const done = await history.complete(value.id, { expectedVersion: next.version });
  expect(done.phase).toBe('complete');
  const got = await history.get(value.id);
  expect(got.state.transcript[0]?.content).toBe('hi');
  expect((await history.list()).map((r) => r.id)).toEqual([value.id]);
  await expect(history.appendTranscript(value.id, { role: 'user-message', text: 'again' })).rejects.toMatchObject({ code: 'state_conflict' });
  const again = await history.start({ idempotencyId: 'k', startedAt: new Date().toISOString(), sessionType: 'chat' });
  expect(again.value.id).not.toBe(value.id);
  await history.deleteSession(value.id);
  await expect(history.get(value.id)).rejects.toMatchObject({ code: 'not_found' });
});
