import { describe, expect, it } from 'vitest';
import type { FeedRecord } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, eventsOf, freshDir, randomStream } from './test-support.fixture.js';

/** A feed record as stream, revision, position and type, to compare feeds. */
const brief = (record: FeedRecord) => [record.streamId, record.revision, record.position, record.type];

describe('a read-only view beside a live writer', () => {
  it('reads a stream the writer made after the view opened and the events it appended since, and its feed shows them too', async () => {
    const dir = freshDir();
    const writer = await fileStore({ directory: dir });
    const [old, fresh] = [randomStream('old'), randomStream('new')];
    await writer.append(old, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const view = await fileStore({ directory: dir, readOnly: true });
    try {
      expect((await eventsOf(view, old)).map((event) => event.type)).toEqual(['A']);
      expect((await collect(view.readAll())).map(brief)).toEqual([[old, 1, 1, 'A']]);
      await writer.append(fresh, [{ type: 'N', data: 1 }], { expectedRevision: 'no_stream' });
      await writer.append(old, [{ type: 'B', data: 2 }], { expectedRevision: 1 });

      expect((await eventsOf(view, fresh)).map((event) => event.type)).toEqual(['N']);
      const read = await view.read(old);
      expect(read.revision).toBe(2);
      expect((await collect(read.events)).map((event) => event.type)).toEqual(['A', 'B']);
      // The feed follows the writer: every position up to its last append, in order, none skipped.
      const feed = (await collect(view.readAll())).map(brief);
      expect(feed).toEqual([
        [old, 1, 1, 'A'],
        [fresh, 1, 2, 'N'],
        [old, 2, 3, 'B'],
      ]);
      expect(feed).toEqual((await collect(writer.readAll())).map(brief));
      expect((await collect(view.readAll({ fromPosition: 3 }))).map(brief)).toEqual([[old, 2, 3, 'B']]);
      expect((await eventsOf(view, randomStream('never'))).length).toBe(0);
    } finally {
      await view.close();
      await writer.close();
    }
  });

  it("its feed sees the writer's compactions and deletions as the writer's feed does", async () => {
    const dir = freshDir();
    const writer = await fileStore({ directory: dir });
    const [kept, gone] = [randomStream('kept'), randomStream('gone')];
    await writer.append(
      kept,
      [1, 2, 3].map((n) => ({ type: 'N', data: n })),
      { expectedRevision: 'no_stream' },
    );
    await writer.append(gone, [{ type: 'G', data: 0 }], { expectedRevision: 'no_stream' });
    const view = await fileStore({ directory: dir, readOnly: true });
    try {
      await collect(view.readAll());
      await writer.compact(kept, { revision: 2, state: 'two', identity: { stream: kept, schemaVersion: 1 } });
      await writer.deleteStream(gone, { expectedRevision: 1 });
      const feed = (await collect(view.readAll())).map(brief);
      expect(feed).toEqual((await collect(writer.readAll())).map(brief));
      expect(feed.map((record) => record[3])).toEqual(['N', '$snapshot', '$deleted']);
      expect((await view.read(gone)).revision).toBe(0);
      const read = await view.read(kept);
      expect(read.snapshot?.state).toBe('two');
      expect((await collect(read.events)).map((event) => event.data)).toEqual([3]);
    } finally {
      await view.close();
      await writer.close();
    }
  });

  it('follow on a view yields what the writer appends after the view opened', async () => {
    const dir = freshDir();
    const writer = await fileStore({ directory: dir });
    const stream = randomStream('followed');
    await writer.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const view = await fileStore({ directory: dir, readOnly: true });
    const abort = new AbortController();
    try {
      const seen: unknown[] = [];
      const following = (async () => {
        for await (const record of view.follow({ signal: abort.signal })) {
          seen.push(brief(record));
          if (seen.length === 3) break;
        }
      })();
      await writer.append(stream, [{ type: 'B', data: 2 }], { expectedRevision: 1 });
      await writer.append(stream, [{ type: 'C', data: 3 }], { expectedRevision: 2 });
      await following;
      expect(seen).toEqual([
        [stream, 1, 1, 'A'],
        [stream, 2, 2, 'B'],
        [stream, 3, 3, 'C'],
      ]);
    } finally {
      abort.abort();
      await view.close();
      await writer.close();
    }
  }, 10_000);

  it('reads a log the writer keeps appending to without failing: each read shows a whole prefix, never less than the last', async () => {
    const dir = freshDir();
    const writer = await fileStore({ directory: dir });
    const stream = randomStream('busy');
    await writer.append(stream, [{ type: 'E', data: 0 }], { expectedRevision: 'no_stream' });
    const view = await fileStore({ directory: dir, readOnly: true });
    let writing = true;
    const appends = (async () => {
      for (let revision = 1; revision < 400; revision++) await writer.append(stream, [{ type: 'E', data: revision }], { expectedRevision: revision });
      writing = false;
    })();
    try {
      let last = 0;
      let lastFeed = 0;
      const readWhole = async () => {
        const read = await view.read(stream);
        const events = await collect(read.events);
        expect(events.map((event) => event.revision)).toEqual(Array.from({ length: read.revision }, (_, i) => i + 1));
        expect(read.revision).toBeGreaterThanOrEqual(last);
        last = read.revision;
        const feed = await collect(view.readAll());
        expect(feed.map((record) => record.position)).toEqual(Array.from({ length: feed.length }, (_, i) => i + 1));
        expect(feed.length).toBeGreaterThanOrEqual(lastFeed);
        lastFeed = feed.length;
      };
      while (writing) await readWhole();
      await appends;
      await readWhole();
      expect(last).toBe(400);
      expect(lastFeed).toBe(400);
    } finally {
      await appends;
      await view.close();
      await writer.close();
    }
  });
});
