import { expect, it } from 'vitest';
import { memoryStore } from '@sessionfold/core';

it("the README's example of the optional members runs", async () => {
  const seen: string[] = [];
  // #region readme-capabilities
  const store = memoryStore();
  const report = await store.verify();
  if (!report.ok) throw new Error(`damaged: ${report.problems.map((p) => p.message).join('; ')}`);

  const slot = store.checkpoints;
  const saved = JSON.parse(((await slot.load('orders')) as string | undefined) ?? 'null');
  const controller = new AbortController();
  const following = (async () => {
    for await (const record of store.follow({ fromPosition: saved?.next ?? 1, signal: controller.signal })) {
      seen.push(`${record.streamId} ${record.type} ${record.position}`);
      await slot.save('orders', JSON.stringify({ storeId: await slot.storeId(), next: record.position + 1 }));
      if (record.type === 'Shipped') controller.abort();
    }
  })();
  await store.append('order-1', [{ type: 'Placed', data: {} }], { expectedRevision: 'no_stream' });
  await store.append('order-1', [{ type: 'Shipped', data: {} }], { expectedRevision: 1 });
  await following; // seen: ['order-1 Placed 1', 'order-1 Shipped 2']
  // #endregion readme-capabilities
  expect(seen).toEqual(['order-1 Placed 1', 'order-1 Shipped 2']);
  expect(JSON.parse((await slot.load('orders')) as string)).toEqual({ storeId: await slot.storeId(), next: 3 });
});
