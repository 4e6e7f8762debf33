import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptionError, type JsonValue } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { frameLine } from './journal-codec.js';
import { freshDir, randomStream, withoutCleanClose } from './test-support.fixture.js';

async function compactedStore() {
  const dir = freshDir();
  const stream = randomStream();
  const store = await fileStore({ directory: dir });
  await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
  await store.compact(stream, { revision: 1, state: { n: 1 }, identity: { stream, schemaVersion: 3 } });
  await store.close();
  const path = join(dir, 'streams', `${stream}.snapshot.json`);
  const envelope = JSON.parse((await readFile(path, 'utf8')).slice(65)) as Record<string, JsonValue>;
  return { dir, stream, path, envelope };
}

async function openError(dir: string): Promise<unknown> {
  // Opened as after a crash: after a clean close, open takes the files as the manifest records them.
  withoutCleanClose(dir);
  return fileStore({ directory: dir }).then(
    (store) => store.close(),
    (e: unknown) => e,
  );
}

describe('snapshot files', () => {
  it('store the state as it was when compact was called, whatever the caller does to its object afterwards', async () => {
    const dir = freshDir();
    const stream = randomStream();
    const store = await fileStore({ directory: dir });
    await store.append(stream, [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    const state = { items: ['a'] };
    const compacted = store.compact(stream, { revision: 1, state, identity: { stream, schemaVersion: 1 } });
    state.items.push('changed after the call');
    await compacted;
    expect((await store.read(stream)).snapshot?.state).toEqual({ items: ['a'] });
    await store.close();
  });

  it('carry the envelope version, identity, revision and the position of their $snapshot change', async () => {
    const { envelope, stream } = await compactedStore();
    expect(envelope).toMatchObject({
      format: 'sessionfold.stream-snapshot',
      formatVersion: 1,
      identity: { stream, schemaVersion: 3 },
      revision: 1,
      position: 2,
      state: { n: 1 },
    });
  });

  it('of an unknown format version, or with fields added, are refused as corruption', async () => {
    for (const change of [{ formatVersion: 2 }, { extra: true }, { revision: 0 }]) {
      const { dir, path, envelope } = await compactedStore();
      await writeFile(path, frameLine(JSON.stringify({ ...envelope, ...change })));
      const error = await openError(dir);
      expect(error, JSON.stringify(change)).toBeInstanceOf(CorruptionError);
      expect((error as CorruptionError).file).toBe(path);
      expect((error as CorruptionError).line).toBe(1);
    }
  });
});
