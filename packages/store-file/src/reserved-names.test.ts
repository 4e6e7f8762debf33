import { appendFileSync, copyFileSync, cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { eventPayload, frameLine } from './journal-codec.js';
import { collect, eventsOf, freshDir, segmentsOf } from './test-support.fixture.js';

const AT = '2026-01-01T00:00:00.000Z';

/** A store holding stream `a` and, written as an earlier release could have, stream `CON` (in the log) and checkpoint `aux`. */
async function storedBefore(): Promise<string> {
  const directory = freshDir();
  const store = await fileStore({ directory });
  await store.append('a', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
  await store.checkpoints!.save('projection', 'state');
  await store.close();
  appendFileSync(segmentsOf(directory).at(-1) as string, frameLine(eventPayload('CON', 1, 2, AT, 'Old', undefined, false, '{"kept":true}')));
  copyFileSync(join(directory, 'checkpoints', 'projection'), join(directory, 'checkpoints', 'aux'));
  return directory;
}

/** A copy of release 0.1.0's store with a journal `streams/CON.jsonl` added after its last position. */
async function legacyWithCon(): Promise<{ directory: string; position: number }> {
  const directory = join(freshDir(), 'store');
  cpSync(fileURLToPath(new URL('./fixtures/release-0.1.0', import.meta.url)), directory, { recursive: true });
  const view = await fileStore({ directory, readOnly: true });
  const position = (await view.status!()).lastPosition + 1;
  await view.close();
  writeFileSync(join(directory, 'streams', 'CON.jsonl'), frameLine(eventPayload('CON', 1, position, AT, 'Old', undefined, false, '{"kept":true}')));
  return { directory, position };
}

describe('names Windows reserves, stored before they were refused', () => {
  it('a stream named CON in the log still reads, exports and deletes; no new one is created, and verify finds nothing wrong with it', async () => {
    const directory = await storedBefore();
    const store = await fileStore({ directory });
    try {
      expect((await eventsOf(store, 'CON')).map((e) => e.data)).toEqual([{ kept: true }]);
      expect((await collect(store.readAll())).map((e) => e.streamId)).toEqual(['a', 'CON']);
      expect(await collect(store.streams())).toEqual([
        { stream: 'CON', revision: 1 },
        { stream: 'a', revision: 1 },
      ]);
      // The name is no file's: only the checkpoint, a file named aux, is reported.
      const report = await store.verify!();
      expect(report.ok).toBe(true);
      expect(report.problems.filter((p) => p.message.includes('CON') || p.file?.includes('CON'))).toEqual([]);
      await expect(store.append('CON', [{ type: 'New', data: 2 }], { expectedRevision: 1 })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(store.append('nul.jsonl', [{ type: 'New', data: 2 }], { expectedRevision: 'any' })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(store.restoreStream('aux', { revision: 1, state: null, identity: { stream: 'aux', schemaVersion: 1 } })).rejects.toBeInstanceOf(
        InvalidInputError,
      );
      await store.deleteStream('CON', { expectedRevision: 1 });
      expect((await store.read('CON')).revision).toBe(0);
      expect((await collect(store.readAll())).map((e) => [e.streamId, e.type])).toEqual([
        ['a', 'A'],
        ['CON', '$deleted'],
      ]);
    } finally {
      await store.close();
    }
    const view = await fileStore({ directory, readOnly: true });
    expect((await view.read('CON')).revision).toBe(0);
    expect((await eventsOf(view, 'a')).map((e) => e.data)).toEqual([1]);
    await view.close();
  });

  it('a checkpoint named aux still loads, no new one is saved, and verify warns that Windows cannot hold its file', async () => {
    const directory = await storedBefore();
    const store = await fileStore({ directory });
    try {
      expect(await store.checkpoints!.load('aux')).toBe('state');
      await expect(store.checkpoints!.save('aux', 'new')).rejects.toBeInstanceOf(InvalidInputError);
      expect(await store.checkpoints!.load('aux')).toBe('state');
      const report = await store.verify!();
      expect(report.ok).toBe(true);
      expect(report.problems.filter((p) => p.code === 'reserved_name').map((p) => [p.severity, p.file])).toEqual([
        ['warning', join(directory, 'checkpoints', 'aux')],
      ]);
    } finally {
      await store.close();
    }
  });

  it('a journal streams/CON.jsonl of an earlier layout is read by a view and kept by the upgrade', async () => {
    const { directory, position } = await legacyWithCon();
    for (const readOnly of [true, false, true]) {
      const store = await fileStore({ directory, readOnly });
      try {
        const events = await eventsOf(store, 'CON');
        expect(events.map((e) => [e.data, e.position])).toEqual([[{ kept: true }, position]]);
        expect((await collect(store.readAll({ fromPosition: position }))).map((e) => e.streamId)).toEqual(['CON']);
      } finally {
        await store.close();
      }
    }
    const store = await fileStore({ directory });
    await store.deleteStream('CON', { expectedRevision: 1 });
    expect((await store.read('CON')).revision).toBe(0);
    await store.close();
  });
});
