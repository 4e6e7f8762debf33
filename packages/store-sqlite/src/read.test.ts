import { ConcurrencyError, type EventStore } from '@sessionfold/core/kernel';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { collect, freshPath, randomStream } from './test-support.fixture.js';

/** Longer than several read pages. */
const LONG = 1300;

async function longStream(store: EventStore, stream: string, count = LONG): Promise<void> {
  for (let from = 0; from < count; from += 100) {
    const events = Array.from({ length: Math.min(100, count - from) }, (_, index) => ({ type: 'Noted', data: { n: from + index + 1 } }));
    await store.append(stream, events, { expectedRevision: from === 0 ? 'no_stream' : from });
  }
}

describe('reading', () => {
  it('streams a stream longer than a page in revision order, from any revision', async () => {
    const store = await sqliteStore({ path: freshPath() });
    const stream = randomStream();
    await longStream(store, stream);
    const all = await collect((await store.read(stream)).events);
    expect(all.map((event) => event.revision)).toEqual(Array.from({ length: LONG }, (_, index) => index + 1));
    const tail = await collect((await store.read(stream, { fromRevision: 700 })).events);
    expect(tail.map((event) => (event.data as { n: number }).n)).toEqual(Array.from({ length: LONG - 699 }, (_, index) => index + 700));
    await store.close();
  });

  it('gives every event of a long stream its own type and stream, however the types run across pages, stored or parsed', async () => {
    const store = await sqliteStore({ path: freshPath() });
    const [first, second] = [randomStream(), randomStream()];
    // Runs of one type that start, end and straddle page boundaries, in two streams read in turns.
    const typeOf = (n: number) => (n < 600 ? 'Started' : n < 1030 ? 'Noted' : n % 2 === 0 ? 'Even' : 'Odd');
    for (const stream of [first, second]) {
      const events = Array.from({ length: LONG }, (_, index) => ({ type: typeOf(index + 1), data: { n: index + 1 } }));
      await store.append(stream, events, { expectedRevision: 'no_stream' });
    }
    const expected = Array.from({ length: LONG }, (_, index) => typeOf(index + 1));
    const readStored = store.readStored?.bind(store);
    if (!readStored) throw new Error('the SQLite store has readStored');
    const [firstRead, secondRead, storedRead] = [await store.read(first), await store.read(second), await readStored(second, { fromRevision: 2 })];
    // Read in turns: each iteration takes its next page while the others are part way through theirs.
    const [a, b, c] = await Promise.all([collect(firstRead.events), collect(secondRead.events), collect(storedRead.events)]);
    expect(a.map((event) => event.type)).toEqual(expected);
    expect(b.map((event) => event.type)).toEqual(expected);
    expect(c.map((event) => event.type)).toEqual(expected.slice(1));
    expect(new Set([...a.map((event) => event.streamId)])).toEqual(new Set([first]));
    expect(new Set([...b.map((event) => event.streamId), ...c.map((event) => event.streamId)])).toEqual(new Set([second]));
    await store.close();
  });

  it('streams the whole feed across pages in position order, from any position', async () => {
    const store = await sqliteStore({ path: freshPath() });
    await longStream(store, randomStream());
    await longStream(store, randomStream(), 200);
    const feed = await collect(store.readAll());
    expect(feed.map((record) => record.position)).toEqual(Array.from({ length: LONG + 200 }, (_, index) => index + 1));
    expect((await collect(store.readAll({ fromPosition: 1000 })))[0]?.position).toBe(1000);
    await store.close();
  });

  it('lets a consumer write while it iterates, and a feed read ends at the position it started at', async () => {
    const store = await sqliteStore({ path: freshPath(), synchronous: 'NORMAL' });
    const source = randomStream();
    const target = randomStream();
    await longStream(store, source);
    let copied = 0;
    for await (const record of store.readAll()) {
      await store.append(target, [{ type: 'Copied', data: record.position }], { expectedRevision: copied === 0 ? 'no_stream' : copied });
      copied++;
    }
    expect(copied).toBe(LONG);
    expect((await store.read(target)).revision).toBe(LONG);
    await store.close();
  });

  it('lists more streams than a page in name order, filtered by prefix', async () => {
    const store = await sqliteStore({ path: freshPath() });
    const run = randomStream('run');
    const names = Array.from({ length: 600 }, (_, index) => `${run}-${String(index).padStart(4, '0')}`);
    await Promise.all(names.map((name) => store.append(name, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' })));
    await store.append(`${run}x`, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' });
    expect((await collect(store.streams({ prefix: `${run}-` }))).map((entry) => entry.stream)).toEqual(names);
    expect(await collect(store.streams({ prefix: `${run}-0599` }))).toEqual([{ stream: `${run}-0599`, revision: 1 }]);
    await store.close();
  });

  it('refuses to go on reading a long stream that another connection compacted meanwhile, instead of skipping events', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    const other = await sqliteStore({ path });
    const stream = randomStream();
    await longStream(store, stream);
    const read = await store.read(stream);
    const iterator = read.events[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toMatchObject({ revision: 1 });
    await other.compact(stream, { revision: 1000, state: null, identity: { stream, schemaVersion: 1 } });
    const rest: number[] = [];
    const failure = await (async () => {
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value.revision);
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ConcurrencyError);
    expect(rest).toEqual(Array.from({ length: rest.length }, (_, index) => index + 2));
    await Promise.all([store.close(), other.close()]);
  });

  it('refuses to go on reading a long stream that was deleted and recreated meanwhile', async () => {
    const store = await sqliteStore({ path: freshPath() });
    const stream = randomStream();
    await longStream(store, stream);
    const read = await store.read(stream);
    const iterator = read.events[Symbol.asyncIterator]();
    await iterator.next();
    await store.deleteStream(stream, { expectedRevision: LONG });
    await longStream(store, stream);
    const failure = await (async () => {
      for (let next = await iterator.next(); !next.done; next = await iterator.next());
    })().catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'concurrency_conflict', stream });
    await store.close();
  });

  it('gives a new record a position past every earlier one even when the newest records were removed', async () => {
    const store = await sqliteStore({ path: freshPath() });
    const older = randomStream();
    const newest = randomStream();
    await store.append(older, [{ type: 'Opened', data: null }], { expectedRevision: 'no_stream' });
    const last = await store.append(
      newest,
      [
        { type: 'Opened', data: null },
        { type: 'Noted', data: null },
      ],
      { expectedRevision: 'no_stream' },
    );
    await store.compact(newest, { revision: 2, state: null, identity: { stream: newest, schemaVersion: 1 } });
    await store.deleteStream(newest, { expectedRevision: 2 });
    const next = await store.append(older, [{ type: 'Noted', data: null }], { expectedRevision: 1 });
    expect(next.position).toBe(last.position + 3);
    expect((await collect(store.readAll())).map((record) => [record.type, record.position])).toEqual([
      ['Opened', 1],
      ['$deleted', 5],
      ['Noted', 6],
    ]);
    await store.close();
  });
});
