import { readFileSync, writeFileSync } from 'node:fs';
import { CorruptionError, StorageError, type EventStore } from '@sessionfold/core/kernel';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from './index.js';
import { collect, freshPath } from './test-support.fixture.js';

/** A closed database with 300 streams of one event each: several leaf pages in every index. */
async function populated(): Promise<{ path: string; streams: string[] }> {
  const path = freshPath();
  const store = await sqliteStore({ path });
  const streams = Array.from({ length: 300 }, (_, n) => `s-${String(n).padStart(4, '0')}`);
  for (const stream of streams) await store.append(stream, [{ type: 'Noted', data: { pad: 'x'.repeat(100) } }], { expectedRevision: 'no_stream' });
  await store.close();
  return { path, streams };
}

/** Overwrites the b-tree header of the first leaf page of `name` (a table or index) with garbage, on disk. */
function damageFirstLeaf(path: string, name: string): void {
  const raw = new Database(path, { readonly: true });
  const pageSize = Number(raw.pragma('page_size', { simple: true }));
  const leaves = raw.prepare("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY path").pluck().all(name) as number[];
  raw.close();
  expect(leaves.length).toBeGreaterThan(1);
  const bytes = readFileSync(path);
  const offset = ((leaves[0] as number) - 1) * pageSize;
  bytes.fill(0xee, offset, offset + 12);
  writeFileSync(path, bytes);
}

/** Reads every stream, collecting the errors. */
async function readEverything(store: EventStore, streams: readonly string[]): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (const stream of streams) {
    await store
      .read(stream)
      .then((read) => collect(read.events))
      .catch((error: unknown) => failures.push(error));
  }
  return failures;
}

describe('damage found by a read', () => {
  it.each(['events_by_revision', 'events'])(
    'after a read meets a damaged page of %s, the store refuses writes until reopened, and writes nothing',
    async (damaged) => {
      const { path, streams } = await populated();
      damageFirstLeaf(path, damaged);
      const store = await sqliteStore({ path });
      const failures = await readEverything(store, streams);
      expect(failures.length).toBeGreaterThan(0);
      for (const failure of failures) expect(failure).toBeInstanceOf(CorruptionError);
      const corruption = failures[0] as CorruptionError;

      const before = readFileSync(path);
      const writes: Array<() => Promise<unknown>> = [
        () => store.append('zz-new', [{ type: 'Noted', data: null }], { expectedRevision: 'no_stream' }),
        () => store.putBlob('zz-new', new Uint8Array([1, 2, 3])),
        () => store.deleteStream('zz-other', { expectedRevision: 'any' }),
        () => store.restoreStream('zz-restored', { revision: 1, state: null, identity: { stream: 'zz-restored', schemaVersion: 1 } }),
      ];
      for (const write of writes) {
        const error = await write().then(
          () => expect.fail('the write was accepted'),
          (failure: unknown) => failure,
        );
        expect(error).toBeInstanceOf(StorageError);
        expect(error).toMatchObject({ code: 'storage_error', poisoned: true, cause: corruption });
        expect((error as Error).message).toContain(path);
        expect((error as Error).message).toContain('damage');
        expect((error as Error).message).toContain('reopen');
      }
      await store.close();
      expect(readFileSync(path).equals(before)).toBe(true);

      // Reopening lifts the refusal (the damage is still there: a read that meets it refuses writes again).
      const reopened = await sqliteStore({ path });
      expect(await reopened.append('zz-new', [{ type: 'Noted', data: null }], { expectedRevision: 'no_stream' })).toMatchObject({ revision: 1 });
      expect((await readEverything(reopened, streams)).length).toBeGreaterThan(0);
      await expect(reopened.append('zz-new', [{ type: 'Noted', data: null }], { expectedRevision: 1 })).rejects.toMatchObject({ poisoned: true });
      await reopened.close();
    },
  );

  it('a blob whose bytes do not match their sha256 is reported, and other writes go on', async () => {
    const path = freshPath();
    const store = await sqliteStore({ path });
    const sha = await store.putBlob('s-1', new Uint8Array([1, 2, 3]));
    const raw = new Database(path);
    raw.prepare('UPDATE blobs SET bytes = ? WHERE sha256 = ?').run(Buffer.from([9, 9, 9]), sha);
    raw.close();
    await expect(store.getBlob(sha)).rejects.toBeInstanceOf(CorruptionError);
    expect(await store.append('s-1', [{ type: 'Noted', data: null }], { expectedRevision: 'no_stream' })).toMatchObject({ revision: 1 });
    await store.close();
  });
});
