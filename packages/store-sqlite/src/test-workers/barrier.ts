import type { EventStore } from '@sessionfold/core/kernel';

/** Returns once `count` workers have arrived, so their work overlaps instead of following process start-up. */
export async function barrier(store: EventStore, stream: string, count: number): Promise<void> {
  await store.append(stream, [{ type: 'Arrived', data: null }], { expectedRevision: 'any' });
  while ((await store.read(stream)).revision < count) await new Promise((resolve) => setTimeout(resolve, 2));
}
