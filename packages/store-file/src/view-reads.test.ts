import { describe, expect, it } from 'vitest';
import { fileStore } from './index.js';
import { collect, eventsOf, freshDir, randomStream } from './test-support.fixture.js';

describe('a read-only view beside a live writer', () => {
  it('reads a stream the writer made after the view opened, and the events it appended since, while its feed stays as of its open', async () => {
    const dir = freshDir();
    const writer = await fileStore({ directory: dir });
    const [old, fresh] = [randomStream('old'), randomStream('new')];
    await writer.append(old, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const view = await fileStore({ directory: dir, readOnly: true });
    try {
      expect((await eventsOf(view, old)).map((event) => event.type)).toEqual(['A']);
      const feedBefore = await collect(view.readAll());
      await writer.append(fresh, [{ type: 'N', data: 1 }], { expectedRevision: 'no_stream' });
      await writer.append(old, [{ type: 'B', data: 2 }], { expectedRevision: 1 });

      expect((await eventsOf(view, fresh)).map((event) => event.type)).toEqual(['N']);
      const read = await view.read(old);
      expect(read.revision).toBe(2);
      expect((await collect(read.events)).map((event) => event.type)).toEqual(['A', 'B']);
      // The feed shows what it showed: positions up to the view's open, none skipped, none new.
      expect(await collect(view.readAll())).toEqual(feedBefore);
      expect((await eventsOf(view, randomStream('never'))).length).toBe(0);
    } finally {
      await view.close();
      await writer.close();
    }
  });

  it('reads a journal the writer keeps appending to without failing: each read shows a whole prefix, never less than the last', async () => {
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
      const readWhole = async () => {
        const read = await view.read(stream);
        const events = await collect(read.events);
        expect(events.map((event) => event.revision)).toEqual(Array.from({ length: read.revision }, (_, i) => i + 1));
        expect(read.revision).toBeGreaterThanOrEqual(last);
        last = read.revision;
      };
      while (writing) await readWhole();
      await appends;
      await readWhole();
      expect(last).toBe(400);
    } finally {
      await appends;
      await view.close();
      await writer.close();
    }
  });
});
