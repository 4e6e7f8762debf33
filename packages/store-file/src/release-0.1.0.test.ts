import { cpSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSessionHistory, type EventStore, type RecordedEvent } from '@sessionfold/core';
import { toStoredEvent } from '@sessionfold/core/store-kit';
import { fileStore } from './index.js';
import { asReleased, collect, freshDir } from './test-support.fixture.js';

const fixture = fileURLToPath(new URL('./fixtures/release-0.1.0', import.meta.url));
const expected = JSON.parse(readFileSync(fileURLToPath(new URL('./fixtures/release-0.1.0.expected.json', import.meta.url)), 'utf8')) as {
  list: unknown[];
  sessions: Record<string, unknown>;
  streams: unknown[];
  feed: unknown[];
};

/** A fresh copy of the fixture: tests never write to the checked-in files. */
function copyOfFixture(): string {
  const dir = join(freshDir(), 'store');
  cpSync(fixture, dir, { recursive: true });
  return dir;
}

/** A record as 0.1.0 read it: without position and time, and without a schema version (every one it stored reads as 1). */
const withoutPositionAndTime = ({ position: _p, recordedAt: _r, schemaVersion, ...rest }: RecordedEvent) => {
  expect(schemaVersion).toBe(1);
  return rest;
};

/** What release 0.1.0 read back: the service's list and get, `streams()` and the change feed. */
async function readBack(store: EventStore) {
  const service = await openSessionHistory({ store });
  const list = await service.list();
  const sessions: Record<string, unknown> = {};
  for (const id of Object.keys(expected.sessions)) sessions[id] = await service.get(id);
  await service.close();
  const read = { list, sessions, streams: await collect(store.streams()), feed: (await collect(store.readAll())).map(withoutPositionAndTime) };
  return asReleased(read, expected);
}

describe('a file store written by release 0.1.0', () => {
  it('reads back the same through a writer and through a read-only view', async () => {
    const writer = await fileStore({ directory: copyOfFixture() });
    expect(await readBack(writer)).toEqual(expected);
    await writer.close();
    const view = await fileStore({ directory: copyOfFixture(), readOnly: true });
    expect(await readBack(view)).toEqual(expected);
    await view.close();
  });

  it('reads stored its journals of lines without a stream name as read and readAll give them, data as JSON text', async () => {
    const view = await fileStore({ directory: copyOfFixture(), readOnly: true });
    const feed = await collect(view.readAll());
    expect(await collect(view.readAllStored!())).toEqual(feed.map(toStoredEvent));
    for (const { stream } of await collect(view.streams())) {
      const read = await view.read(stream);
      const stored = await view.readStored!(stream);
      expect(stored.snapshot).toEqual(read.snapshot);
      expect(await collect(stored.events)).toEqual((await collect(read.events)).map(toStoredEvent));
    }
    await view.close();
  });

  it('takes appends to its journals, which read back after a reopen, also in a read-only view', async () => {
    const directory = copyOfFixture();
    const writer = await fileStore({ directory });
    const appended = await writer.append('ledger-1', [{ type: 'Deposited', data: { amount: 7 }, eventId: 'd-2' }], { expectedRevision: 2 });
    expect(appended.revision).toBe(3);
    await writer.append('catalog-2', [{ type: 'Noted', data: null }], { expectedRevision: 'no_stream' });
    await writer.close();
    for (const store of [await fileStore({ directory }), await fileStore({ directory, readOnly: true })]) {
      const events = await collect((await store.read('ledger-1')).events);
      expect(events.map((e) => [e.revision, e.type, e.eventId, e.data])).toEqual([
        [1, 'Deposited', 'd-1', { amount: 5 }],
        [2, 'Withdrawn', undefined, { amount: 2, note: 'x\u0000y' }],
        [3, 'Deposited', 'd-2', { amount: 7 }],
      ]);
      expect(events[2]?.position).toBe(appended.position);
      const feed = (await collect(store.readAll())).map(withoutPositionAndTime);
      expect(feed.slice(0, expected.feed.length)).toEqual(expected.feed);
      expect(feed.slice(expected.feed.length).map((r) => `${r.streamId}@${r.revision}`)).toEqual(['ledger-1@3', 'catalog-2@1']);
      await store.close();
    }
  });
});
