import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '@sessionfold/core/kernel';
import { fileStore } from './index.js';
import { eventPayload, frameLine } from './journal-codec.js';
import { collect, eventsOf, freshDir, withoutCleanClose } from './test-support.fixture.js';

/** A store holding stream `a` and, written as an earlier release could have, stream `CON` and checkpoint `aux`. */
async function storedBefore(): Promise<string> {
  const directory = freshDir();
  const store = await fileStore({ directory });
  await store.append('a', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
  await store.checkpoints!.save('projection', 'state');
  await store.close();
  writeFileSync(
    join(directory, 'streams', 'CON.jsonl'),
    frameLine(eventPayload('CON', 1, 2, '2026-01-01T00:00:00.000Z', 'Old', undefined, false, '{"kept":true}')),
  );
  copyFileSync(join(directory, 'checkpoints', 'projection'), join(directory, 'checkpoints', 'aux'));
  withoutCleanClose(directory);
  return directory;
}

describe('names Windows reserves, stored before they were refused', () => {
  it('still read, export and delete, verify warns about each, and no new one is created', async () => {
    const directory = await storedBefore();
    const store = await fileStore({ directory });
    try {
      expect((await eventsOf(store, 'CON')).map((e) => e.data)).toEqual([{ kept: true }]);
      expect((await collect(store.readAll())).map((e) => e.streamId)).toEqual(['a', 'CON']);
      expect(await store.checkpoints!.load('aux')).toBe('state');
      const report = await store.verify!();
      expect(report.ok).toBe(true);
      const warnings = report.problems.filter((p) => p.code === 'reserved_name');
      expect(warnings.map((p) => [p.severity, p.file])).toEqual([
        ['warning', join(directory, 'streams', 'CON.jsonl')],
        ['warning', join(directory, 'checkpoints', 'aux')],
      ]);
      expect(warnings[0]?.message).toContain('stream CON has a name Windows reserves');
      await expect(store.append('CON', [{ type: 'New', data: 2 }], { expectedRevision: 1 })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(store.checkpoints!.save('aux', 'new')).rejects.toBeInstanceOf(InvalidInputError);
      await expect(store.append('nul.jsonl', [{ type: 'New', data: 2 }], { expectedRevision: 'any' })).rejects.toBeInstanceOf(InvalidInputError);
      await store.deleteStream('CON', { expectedRevision: 1 });
      expect((await store.read('CON')).revision).toBe(0);
      expect((await store.verify!()).problems.filter((p) => p.code === 'reserved_name').map((p) => p.file)).toEqual([join(directory, 'checkpoints', 'aux')]);
    } finally {
      await store.close();
    }
  });
});
