import { cp, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openSessionHistory } from '@sessionfold/core';
import type { EventStore, RecordedEvent } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { asReleased, collect, freshDir } from './test-support.fixture.js';

const fixture = fileURLToPath(new URL('./fixtures/release-0.1.0', import.meta.url));
const expectedFile = fileURLToPath(new URL('./fixtures/release-0.1.0.expected.json', import.meta.url));

interface Expected {
  list: unknown[];
  sessions: Record<string, unknown>;
  streams: unknown[];
  feed: Record<string, unknown>[];
}

/** A copy of the fixture in a fresh directory: tests never write to the checked-in files. */
async function copyOfFixture(): Promise<string> {
  const dir = join(freshDir(), 'store');
  await cp(fixture, dir, { recursive: true });
  return dir;
}

/** Every file under `dir` with its bytes, to show that nothing changed. */
async function contents(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name);
      files[path.slice(dir.length)] = (await readFile(path)).toString('base64');
    }
  }
  return files;
}

/** What release 0.1.0 read back, read again through the service and the store. */
async function expectReleaseReads(store: EventStore, expected: Expected): Promise<void> {
  const service = await openSessionHistory({ store });
  try {
    expect(asReleased(await service.list(), expected.list)).toEqual(expected.list);
    for (const [id, session] of Object.entries(expected.sessions)) expect(asReleased(await service.get(id), session), id).toEqual(session);
  } finally {
    await service.close();
  }
  expect(await collect(store.streams())).toEqual(expected.streams);
  const feed = await collect(store.readAll());
  // The expectation keeps only the fields that do not depend on when the fixture was written.
  const pick = (event: RecordedEvent, like: Record<string, unknown>) =>
    Object.fromEntries(Object.keys(like).map((key) => [key, event[key as keyof RecordedEvent]]));
  expect(feed.map((event, index) => pick(event, expected.feed[index] ?? {}))).toEqual(expected.feed);
  for (const { stream } of await collect(store.streams())) {
    for (const sha of await collect(store.blobs(stream))) expect(await store.getBlob(sha), sha).toBeDefined();
  }
}

describe('a store written by release 0.1.0', () => {
  it('opens for writing and reads back what 0.1.0 read', async () => {
    const expected = JSON.parse(await readFile(expectedFile, 'utf8')) as Expected;
    const dir = await copyOfFixture();
    const store = await fileStore({ directory: dir });
    try {
      await expectReleaseReads(store, expected);
    } finally {
      await store.close();
    }
    const again = await fileStore({ directory: dir, readOnly: true });
    try {
      await expectReleaseReads(again, expected);
    } finally {
      await again.close();
    }
  });

  it('opens read-only, reads back what 0.1.0 read, and writes nothing', async () => {
    const expected = JSON.parse(await readFile(expectedFile, 'utf8')) as Expected;
    const dir = await copyOfFixture();
    const before = await contents(dir);
    const store = await fileStore({ directory: dir, readOnly: true });
    try {
      await expectReleaseReads(store, expected);
    } finally {
      await store.close();
    }
    expect(await contents(dir)).toEqual(before);
  });
});
