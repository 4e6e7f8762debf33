import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openSessionHistory, type RecordedEvent, type SessionRecord } from '@sessionfold/core';
import type { EventStore } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { collect, freshDir } from './test-support.fixture.js';

const fixture = fileURLToPath(new URL('./fixtures/format-3', import.meta.url));
const expected = JSON.parse(readFileSync(fileURLToPath(new URL('./fixtures/format-3.expected.json', import.meta.url)), 'utf8')) as {
  streams: unknown[];
  reads: Record<string, unknown>;
  feed: unknown[];
  blobs: string[];
  list: { id: string; phase: string }[];
  sessions: Record<string, SessionRecord>;
};

/** A fresh copy of the fixture: tests never write to the checked-in files. */
function copyOfFixture(): string {
  const dir = join(freshDir(), 'store');
  cpSync(fixture, dir, { recursive: true });
  return dir;
}

const withoutTime = ({ recordedAt: _r, ...rest }: RecordedEvent) => rest;

/** The store-level reads, exactly as the release that wrote the fixture read them. */
async function storeReads(store: EventStore) {
  const streams = await collect(store.streams());
  const reads: Record<string, unknown> = {};
  for (const { stream } of streams) {
    const read = await store.read(stream);
    reads[stream] = { snapshot: read.snapshot, events: (await collect(read.events)).map(withoutTime) };
  }
  return { streams, reads, feed: (await collect(store.readAll())).map(withoutTime) };
}

/** What a session is across releases: its id, phase, version, start and transcript lines. */
const essentials = (record: SessionRecord) => ({
  id: record.id,
  phase: record.phase,
  version: record.version,
  startedAt: record.startedAt,
  transcript: ((record.state as { transcript?: { content: string }[] }).transcript ?? []).map((entry) => entry.content),
});

async function expectSameReads(store: EventStore): Promise<void> {
  expect(await storeReads(store)).toEqual({ streams: expected.streams, reads: expected.reads, feed: expected.feed });
  for (const sha of expected.blobs) expect(await store.getBlob(sha), sha).toBeDefined();
  const service = await openSessionHistory({ store, readOnly: true });
  try {
    const listed = (await service.list()).map(({ id, phase }) => ({ id, phase }));
    expect(listed).toEqual(expect.arrayContaining(expected.list.map(({ id, phase }) => ({ id, phase }))));
    for (const [id, session] of Object.entries(expected.sessions)) expect(essentials(await service.get(id)), id).toEqual(essentials(session));
  } finally {
    await service.close();
  }
}

describe('a file store written in format 3 (versioned events, snapshots, a deletion, blobs, sessions)', () => {
  it('reads back the same streams, revisions, data, snapshots and sessions through a writer and a read-only view', async () => {
    const dir = copyOfFixture();
    const writer = await fileStore({ directory: dir });
    try {
      await expectSameReads(writer);
    } finally {
      await writer.close();
    }
    const view = await fileStore({ directory: dir, readOnly: true });
    try {
      await expectSameReads(view);
    } finally {
      await view.close();
    }
  });

  it('keeps the deleted stream refusable as never existed', async () => {
    const store = await fileStore({ directory: copyOfFixture() });
    try {
      await expect(store.append('ledger-2', [{ type: 'Opened', data: {} }], { expectedRevision: 'never_existed' })).rejects.toMatchObject({
        code: 'concurrency_conflict',
      });
    } finally {
      await store.close();
    }
  });
});
