import { describe, expect, it } from 'vitest';
import type { EventStore, RecordedEvent } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir, random, randomStream } from './test-support.fixture.js';

/** Reads from many start points: every answer must be exactly the matching slice of the full history. */
async function checkReads(store: EventStore, stream: string, other: string, rand: () => number): Promise<void> {
  const all = await collect((await store.read(stream)).events);
  const feed = (await collect(store.readAll())).filter((r) => r.type !== '$snapshot');
  for (let k = 0; k < 40; k++) {
    const from = 1 + Math.floor(rand() * (all[all.length - 1] as RecordedEvent).revision);
    const read = await store.read(stream, { fromRevision: from });
    const expected = read.snapshot ? all.filter((e) => e.revision > (read.snapshot?.revision ?? 0)) : all.filter((e) => e.revision >= from);
    expect(
      (await collect(read.events)).map((e) => e.revision),
      `read from ${from}`,
    ).toEqual(expected.map((e) => e.revision));
    const position = 1 + Math.floor(rand() * (feed[feed.length - 1] as RecordedEvent).position);
    const fromFeed = (await collect(store.readAll({ fromPosition: position }))).filter((r) => r.type !== '$snapshot');
    expect(
      fromFeed.map((r) => [r.streamId === other, r.position]),
      `readAll from ${position}`,
    ).toEqual(feed.filter((r) => r.position >= position).map((r) => [r.streamId === other, r.position]));
  }
}

describe('reads that start in the middle of long journals', () => {
  it('return exactly the right events from any revision or position, before and after compaction and reopening', async () => {
    const rand = random(20261129);
    const dir = freshDir();
    const [stream, other] = [randomStream('long'), randomStream('other')];
    let store = await fileStore({ directory: dir });
    let revision = 0;
    let otherRevision = 0;
    while (revision < 1500) {
      const size = 1 + Math.floor(rand() * 40);
      const events = Array.from({ length: size }, (_, i) => ({ type: 'N', data: { n: revision + i + 1, pad: 'é'.repeat(Math.floor(rand() * 30)) } }));
      revision = (await store.append(stream, events, { expectedRevision: revision })).revision;
      if (rand() < 0.3) otherRevision = (await store.append(other, [{ type: 'O', data: otherRevision }], { expectedRevision: otherRevision })).revision;
    }
    await checkReads(store, stream, other, rand);
    await store.close();
    store = await fileStore({ directory: dir });
    await checkReads(store, stream, other, rand);
    await store.compact(stream, { revision: 700, state: { upTo: 700 }, identity: { stream, schemaVersion: 1 } });
    for (let i = 0; i < 300; i++) revision = (await store.append(stream, [{ type: 'N', data: { n: revision + 1 } }], { expectedRevision: revision })).revision;
    await checkReads(store, stream, other, rand);
    await store.close();
    store = await fileStore({ directory: dir });
    await checkReads(store, stream, other, rand);
    const read = await store.read(stream);
    expect(read.snapshot?.revision).toBe(700);
    expect((await collect(read.events)).map((e) => (e.data as { n: number }).n)).toEqual(Array.from({ length: revision - 700 }, (_, i) => 701 + i));
    await store.close();
  });
});
